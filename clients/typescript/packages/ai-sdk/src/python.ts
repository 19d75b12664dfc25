// Python's spellings of a string that the Python memory-tool backend's paths and messages use, so this
// package's say the same (compared with Python's own output in test/text.test.ts).

// What Python's repr() escapes: every character str.isprintable() refuses (control, format, unassigned,
// private use, separators but the space).
const NON_PRINTABLE = /^[\p{C}\p{Z}]$/u;

/** Python's repr() of a string, as the Python backend's messages quote a path. */
export function pyRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escapes: Record<string, string> = {
    "\\": "\\\\",
    [quote]: "\\" + quote,
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
  };
  const body = Array.from(text, (char) => {
    if (char in escapes) return escapes[char];
    if (char === " " || !NON_PRINTABLE.test(char)) return char;
    const code = char.codePointAt(0)!;
    const [mark, width] = code < 0x100 ? ["x", 2] : code < 0x10000 ? ["u", 4] : ["U", 8];
    return `\\${mark}${code.toString(16).padStart(width, "0")}`;
  });
  return quote + body.join("") + quote;
}

/** Python's urllib.parse.quote(text, safe=""): everything but letters, digits and `_.-~` percent-encoded. */
export const quoteSegment = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
