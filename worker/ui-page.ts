/**
 * The inspector page (DESIGN.md §7): one self-contained HTML document, served at `/` by ui.ts.
 * Inline CSS and vanilla JS, no build step and no external URLs, so it works offline. The script
 * is four strings in fixed order: the chain verifier (ui-canon.ts), the Connect client
 * (ui-rpc.ts), view helpers (ui-view.ts) and the behaviour (ui-app.ts), wrapped in one strict
 * function scope. Tested by test/node/integration/ui.test.ts.
 */
import { UI_APP_JS } from "./ui-app.js";
import { UI_CANON_JS } from "./ui-canon.js";
import { UI_RPC_JS } from "./ui-rpc.js";
import { UI_CSS } from "./ui-style.js";
import { UI_VIEW_JS } from "./ui-view.js";

export { UI_CANON_JS } from "./ui-canon.js";
export { UI_CSS } from "./ui-style.js";

/** The page's whole inline script. @internal */
export const INSPECTOR_JS = `(() => {
"use strict";
${UI_CANON_JS}
${UI_RPC_JS}
${UI_VIEW_JS}
${UI_APP_JS}
})();
`;

const BODY = `
<header>
  <h1>agentsessions</h1><span class="sub">inspector</span>
  <output id="status" role="status" aria-live="polite"></output>
  <label class="token">Token <input id="token" type="password" autocomplete="off" placeholder="bearer token (if required)"></label>
</header>
<main>
  <section class="pane" aria-label="Sessions">
    <form id="list-form">
      <label>Project <input id="project" name="project" value="default" autocomplete="off"></label>
      <button type="submit">List sessions</button>
    </form>
    <table id="sessions">
      <thead><tr><th>uid</th><th>name</th><th>harness</th><th class="num">last seq</th><th>exec / compute</th><th>created</th></tr></thead>
      <tbody></tbody>
    </table>
    <p><button id="more" type="button" hidden>more</button></p>
    <h3>New session</h3>
    <form id="create-form">
      <label>Project <input name="project" value="default" autocomplete="off"></label>
      <label>Name <input name="name" autocomplete="off"></label>
      <label>Harness <input name="harness" value="echo" autocomplete="off"></label>
      <button type="submit">Create</button>
    </form>
  </section>
  <section class="pane" aria-label="Session">
    <p id="empty">Select a session, or create one.</p>
    <div id="detail" hidden>
      <h2 id="title"></h2>
      <dl id="meta"></dl>
      <div id="forks-box" class="box" hidden><strong>Forks</strong><ul id="forks"></ul></div>
      <div class="actions">
        <button id="refresh" type="button">Refresh</button>
        <button id="verify-chain" type="button">Verify chain</button>
        <span>|</span>
        <label>Fork at seq <input id="fork-seq" inputmode="numeric" placeholder="head"></label>
        <button id="fork" type="button">Fork</button>
        <button id="suspend" type="button">Suspend</button>
        <button id="resume" type="button">Resume</button>
        <button id="cancel" type="button">Cancel turn</button>
        <button id="delete" type="button">Delete</button>
      </div>
      <div id="approval" class="box" hidden>
        <p id="approval-text"></p>
        <div class="actions">
          <label>Reason <input id="approval-reason" autocomplete="off"></label>
          <button id="approve" type="button">Approve</button>
          <button id="deny" type="button">Deny</button>
          <button id="continue" type="button">Continue turn</button>
        </div>
      </div>
      <form id="exec-form">
        <input id="exec-text" placeholder="Message for a new turn" autocomplete="off" required>
        <button id="run" type="submit">Run turn</button>
      </form>
      <div id="streaming" class="box" hidden><div id="stream-label">streaming…</div><pre id="stream-text"></pre></div>
      <p id="verify" role="status"></p>
      <h3>Journal</h3>
      <table id="timeline">
        <thead><tr><th class="num">seq</th><th>kind</th><th>exec</th><th>role: text / detail</th><th>hash</th></tr></thead>
        <tbody></tbody>
      </table>
      <p id="timeline-empty" hidden>No records yet: run a turn.</p>
    </div>
  </section>
</main>`;

export const INSPECTOR_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentsessions inspector</title>
<link rel="icon" href="data:,">
<style>${UI_CSS}</style>
</head>
<body>${BODY}
<script>${INSPECTOR_JS}</script>
</body>
</html>
`;
