/**
 * Refuses a WebSocket upgrade the way the host does: an HTTP status with a Connect JSON error, then
 * the socket closes. Node hands an upgrade's socket over without the server's error listener, so a
 * client that resets the connection after reading the refusal (the SDK terminates at once) would
 * raise an uncaught ECONNRESET; the refusal is already delivered then, so that error is dropped.
 */
import type { Duplex } from "node:stream";

export function refuseUpgrade(socket: Duplex, status: number, code: string, message: string): void {
  socket.on("error", () => {});
  const body = JSON.stringify({ code, message });
  socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
