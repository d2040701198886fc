/**
 * A timer for a due time that moves far more often than it fires: a session object's turns each
 * push "report the running turn at start + 1 s" out, and clear it again when the turn ends.
 * Setting and clearing a platform timer on every turn showed in workerd's CPU profile; here one
 * timer stays armed, and when it fires for a due time that has since moved later, it arms itself
 * again for the remainder. It never fires early, and fires at most once per `set`.
 *
 * Time is `Date.now()` (in workerd it moves on only between I/O events, as timers do), not a
 * session's injectable clock, which tests may hold still.
 */
export class LazyTimer {
  private _due: number | undefined;
  private _timer: ReturnType<typeof setTimeout> | undefined;
  private _armedFor = 0;

  constructor(private readonly _fire: () => void) {}

  /** Fires at `due` (epoch ms), unless cleared or set again first. */
  set(due: number): void {
    this._due = due;
    if (this._timer !== undefined && this._armedFor <= due) return;
    this._arm(due);
  }

  /** Nothing fires until the next `set` (the armed timer, if any, finds nothing due). */
  clear(): void {
    this._due = undefined;
  }

  private _arm(due: number): void {
    if (this._timer !== undefined) clearTimeout(this._timer);
    this._armedFor = due;
    this._timer = setTimeout(this._tick, Math.max(0, due - Date.now()));
  }

  private readonly _tick = (): void => {
    this._timer = undefined;
    const due = this._due;
    if (due === undefined) return;
    if (due > Date.now()) return this._arm(due);
    this._due = undefined;
    this._fire();
  };
}
