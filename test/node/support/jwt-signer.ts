/**
 * Test-only JWT issuance: RSA 2048 and EC P-256 key pairs from Node's WebCrypto and a compact JWS
 * signer, so tests can mint the tokens an identity provider would.
 */
import { webcrypto } from "node:crypto";
import type { JwkKey } from "../../../worker/auth/jwt.js";

const { subtle } = webcrypto;
export type KeyPair = { privateKey: webcrypto.CryptoKey; publicJwk: JwkKey };

export const b64u = (bytes: Uint8Array | ArrayBuffer) => Buffer.from(bytes as ArrayBuffer).toString("base64url");
export const seg = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");

export async function rsaPair(): Promise<KeyPair> {
  const alg = { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" };
  const { privateKey, publicKey } = await subtle.generateKey(alg, true, ["sign", "verify"]);
  return { privateKey, publicJwk: (await subtle.exportKey("jwk", publicKey)) as JwkKey };
}

export async function ecPair(): Promise<KeyPair> {
  const { privateKey, publicKey } = await subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  return { privateKey, publicJwk: (await subtle.exportKey("jwk", publicKey)) as JwkKey };
}

/** A compact JWS over `header.payload`; ECDSA output from WebCrypto is already the raw r||s JWS wants. */
export async function sign(key: webcrypto.CryptoKey, header: Record<string, unknown>, payload: unknown): Promise<string> {
  const input = `${seg(header)}.${seg(payload)}`;
  const params = key.algorithm.name === "ECDSA" ? { name: "ECDSA", hash: "SHA-256" } : { name: "RSASSA-PKCS1-v1_5" };
  return `${input}.${b64u(await subtle.sign(params, key, Buffer.from(input)))}`;
}
