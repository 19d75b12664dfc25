// js-yaml ships no types; the tests read the committed schema with its `load` alone.
declare module "js-yaml" {
  const yaml: { load(text: string): unknown };
  export default yaml;
}
