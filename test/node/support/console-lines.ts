/**
 * Captures what the code under test writes to the console, by every method, in order: structured
 * lines go out through the method of their level (objects/log-line.ts), so a test that read one
 * method would miss the others. Restored by `vi.restoreAllMocks()`.
 */
import { vi } from "vitest";

export interface ConsoleLine {
  method: "log" | "info" | "warn" | "error" | "debug";
  text: string;
}

export function captureConsole(): ConsoleLine[] {
  const lines: ConsoleLine[] = [];
  for (const method of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, method).mockImplementation((l: unknown) => void lines.push({ method, text: String(l) }));
  }
  return lines;
}

/** The captured lines that are structured (one JSON object each), parsed. */
export function structured(lines: readonly ConsoleLine[]): Record<string, unknown>[] {
  return lines.flatMap((l) => {
    try {
      return [JSON.parse(l.text) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

/** The captured lines' texts. */
export function texts(lines: readonly ConsoleLine[]): string[] {
  return lines.map((l) => l.text);
}
