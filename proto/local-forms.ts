/**
 * How protobuf-es holds two well-known types in a message field, which every schema-driven walk
 * here (the binary encoder, the JCS writer, the unknown-field walk) must follow: a
 * google.protobuf.Struct is a plain JSON object (except inside a google.protobuf.Value), and a
 * wrapper type (google/protobuf/wrappers.proto) in a singular field outside a oneof is its bare
 * value.
 */
import type { DescMessage } from "@bufbuild/protobuf";

export const WRAPPER_TYPES: ReadonlySet<string> = new Set(
  ["Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"].map((t) => `google.protobuf.${t}Value`),
);

/** Whether a value of type `desc` in a field of `parent` is held as a JSON object. */
export function heldAsJson(desc: DescMessage, parent: DescMessage): boolean {
  return desc.typeName === "google.protobuf.Struct" && parent.typeName !== "google.protobuf.Value";
}
