/**
 * The inspector's stylesheet: a two-pane layout (sessions left, the open session right) that
 * stacks on narrow screens, light and dark. Inlined by ui-page.ts.
 * @internal
 */
export const UI_CSS = String.raw`
:root {
  color-scheme: light dark;
  --bg: #fbfbfa; --fg: #1d1d1f; --muted: #6b6b70; --line: #e2e2e0; --panel: #ffffff;
  --accent: #2f5fd0; --good: #1e7a3c; --bad: #b3261e; --sel: #eaf0ff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #161618; --fg: #e8e8ea; --muted: #9a9aa2; --line: #2e2e33; --panel: #1e1e21;
    --accent: #8aa8ff; --good: #5cc47e; --bad: #ff7b72; --sel: #26304a; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
header { display: flex; gap: 1rem; align-items: baseline; padding: .6rem 1rem; border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.1rem; margin: 0; }
header .sub { color: var(--muted); }
header .token { margin-left: auto; }
#status { margin-left: auto; color: var(--muted); max-width: 60%; overflow-wrap: anywhere; }
#status.error { color: var(--bad); }
main { display: grid; grid-template-columns: minmax(22rem, 2fr) 3fr; gap: 1rem; padding: 1rem; }
@media (max-width: 900px) { main { grid-template-columns: 1fr; } }
.pane { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .8rem 1rem; min-width: 0; }
h2 { font-size: 1.05rem; margin: .2rem 0 .6rem; overflow-wrap: anywhere; }
h3 { font-size: .95rem; margin: 1rem 0 .4rem; }
form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin: 0 0 .6rem; }
label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
input { font: inherit; padding: .3rem .4rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
#exec-text { flex: 1; min-width: 12rem; }
button { font: inherit; padding: .3rem .7rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); cursor: pointer; }
button:hover:not(:disabled) { border-color: var(--accent); }
button:disabled { opacity: .5; cursor: default; }
button.link { border: 0; padding: 0; background: none; color: var(--accent); text-decoration: underline; }
.actions { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin: .6rem 0; }
.actions input { width: 5rem; }
table { width: 100%; border-collapse: collapse; font-size: .85rem; }
th { text-align: left; color: var(--muted); font-weight: 600; border-bottom: 1px solid var(--line); padding: .25rem .4rem; }
td { padding: .25rem .4rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
tr.session, tr.record { cursor: pointer; }
tr.session:hover, tr.record:hover, tr.selected { background: var(--sel); }
tr.bad-row { outline: 2px solid var(--bad); }
td.empty { color: var(--muted); font-style: italic; }
.mono, pre { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: .8rem; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.time { white-space: nowrap; color: var(--muted); }
.kind { font-weight: 600; font-size: .75rem; }
.kind-input { color: #2f7d9a; } .kind-output { color: var(--good); } .kind-end { color: var(--muted); }
.kind-error { color: var(--bad); } .kind-model_call { color: #8a5cc2; } .kind-execution_start { color: var(--muted); }
pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
tr.record-json td { background: var(--bg); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0; font-size: .85rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
.box { border: 1px solid var(--line); border-radius: 4px; padding: .5rem .7rem; margin: .6rem 0; }
#approval { border-color: var(--accent); }
#streaming pre { min-height: 1.5em; }
#verify { font-weight: 600; margin: .4rem 0; }
#verify.good { color: var(--good); }
#verify.bad { color: var(--bad); }
#empty, #timeline-empty { color: var(--muted); }
`;
