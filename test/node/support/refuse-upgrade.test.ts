import { once } from "node:events";
import { createServer } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { refuseUpgrade } from "./refuse-upgrade.js";

describe("refuseUpgrade", () => {
  it("answers the status and Connect error, and a client that resets first raises no error", async () => {
    const errors: unknown[] = [];
    const onUncaught = (e: unknown) => errors.push(e);
    process.on("uncaughtException", onUncaught);
    const sockets: Socket[] = [];
    const http = createServer();
    http.on("upgrade", (_req, socket) => {
      sockets.push(socket as Socket);
      refuseUpgrade(socket, 503, "unavailable", "starting up");
    });
    http.listen(0, "127.0.0.1");
    await once(http, "listening");
    const { port } = http.address() as AddressInfo;
    const upgrade =
      "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
    try {
      const plain = connect(port, "127.0.0.1");
      plain.write(upgrade);
      let text = "";
      for await (const chunk of plain) text += String(chunk);
      expect(text).toMatch(/^HTTP\/1\.1 503 /);
      expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toEqual({ code: "unavailable", message: "starting up" });

      // The server has ended its side and still reads when the client resets (as the SDK's
      // terminate() may): the RST reaches a socket that Node handed over without a listener.
      for (let i = 0; i < 5; i++) {
        const s = connect(port, "127.0.0.1");
        s.on("error", () => {});
        s.write(upgrade);
        await once(s, "data");
        s.resetAndDestroy();
      }
      await expect.poll(() => sockets.filter((s) => s.destroyed).length).toBe(6);
      await new Promise((r) => setTimeout(r, 50));
      expect(errors).toEqual([]);
    } finally {
      process.off("uncaughtException", onUncaught);
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    }
  });
});
