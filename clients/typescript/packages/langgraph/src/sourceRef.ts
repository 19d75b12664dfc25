/**
 * The source reference a store key is kept under: `lg/<namespace>#<key>`, each label percent-encoded as
 * Python's `urllib.parse.quote(label, safe="")` encodes it, so the Python and TypeScript stores name the same
 * item with the same reference and each finds what the other wrote.
 */

export const SOURCE_REF_PREFIX = "lg/";
/** The longest source reference Archivist keeps. */
export const SOURCE_REF_MAX_CHARS = 200;

/** `encodeURIComponent` leaves `!'()*` as they are, where Python's `quote` encodes them. */
function quote(label: string): string {
  return encodeURIComponent(label).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function unquote(label: string): string {
  try {
    return decodeURIComponent(label);
  } catch {
    return label; // not written by a store: kept as it is rather than refused
  }
}

/** The start of every reference under `namespace` (and under longer namespaces beginning with its labels). */
export function sourceRefStart(namespace: readonly string[]): string {
  return SOURCE_REF_PREFIX + namespace.map(quote).join("/");
}

export function sourceRef(namespace: readonly string[], key: string): string {
  const ref = `${sourceRefStart(namespace)}#${quote(key)}`;
  if (ref.length > SOURCE_REF_MAX_CHARS) {
    throw new RangeError(
      `The namespace and key make a source reference of ${ref.length} characters; ` +
        `Archivist keeps at most ${SOURCE_REF_MAX_CHARS}. Use a shorter key.`,
    );
  }
  return ref;
}

/** The namespace and key a store wrote under `ref`, or null for a memory written some other way. */
export function parseSourceRef(ref: string | null | undefined): { namespace: string[]; key: string } | null {
  if (!ref || !ref.startsWith(SOURCE_REF_PREFIX) || !ref.includes("#")) {
    return null;
  }
  const rest = ref.slice(SOURCE_REF_PREFIX.length);
  const hash = rest.indexOf("#");
  return { namespace: rest.slice(0, hash).split("/").map(unquote), key: unquote(rest.slice(hash + 1)) };
}
