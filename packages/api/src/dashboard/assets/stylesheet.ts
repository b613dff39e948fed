/** The dashboard's one stylesheet, served at /dashboard/assets/dashboard.css (kept in code so builds carry it). */
export const DASHBOARD_CSS = `
:root { --fg: #1d2330; --muted: #6b7385; --line: #e3e6ec; --bg: #f7f8fa; --card: #fff; --accent: #3451b2;
  --ok: #1f7a3d; --bad: #b42318; --warn: #9a6700; --wait: #6f42c1; --run: #0b6bcb; font-size: 14px; }
* { box-sizing: border-box; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
header.top { display: flex; align-items: center; gap: 16px; padding: 8px 20px; background: #141a26; color: #dfe4ee; }
header.top a { color: #dfe4ee; } header.top .muted { color: #97a0b3; }
.brand { font-weight: 700; font-size: 16px; letter-spacing: .5px; }
.spacer { flex: 1; }
.picker { position: relative; } .picker summary { cursor: pointer; list-style: none; padding: 4px 8px; border: 1px solid #2c3547; border-radius: 6px; }
.picker ul { position: absolute; z-index: 5; margin: 4px 0 0; padding: 6px 0; list-style: none; background: var(--card); border: 1px solid var(--line); border-radius: 6px; min-width: 280px; box-shadow: 0 6px 20px rgba(0,0,0,.15); }
.picker li a { display: block; padding: 6px 12px; color: var(--fg); } .picker li a:hover { background: var(--bg); text-decoration: none; }
nav.envs { display: flex; gap: 4px; } nav.envs a { padding: 4px 10px; border-radius: 6px; }
nav.envs a[aria-current] { background: #2c3547; }
form.branch, form.signout { display: flex; gap: 8px; align-items: center; margin: 0; }
nav.sections { display: flex; gap: 2px; padding: 0 20px; background: var(--card); border-bottom: 1px solid var(--line); }
nav.sections a { padding: 10px 12px; color: var(--muted); border-bottom: 2px solid transparent; }
nav.sections a[aria-current] { color: var(--fg); border-bottom-color: var(--accent); }
main { padding: 20px; max-width: 1400px; } main.plain { max-width: 720px; margin: 40px auto; }
h1 { font-size: 20px; margin: 0 0 16px; } h2 { font-size: 16px; margin: 24px 0 10px; } .card > h2:first-child { margin-top: 0; }
.muted { color: var(--muted); }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px; margin-bottom: 16px; }
table { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .3px; }
tr:last-child td { border-bottom: 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 6px 18px; margin: 0; } dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #eef0f4; color: var(--muted); }
.status-completed { background: #e3f4e8; color: var(--ok); }
.status-failed, .status-crashed, .status-system_failure, .status-timed_out, .status-timedout { background: #fde8e7; color: var(--bad); }
.status-canceled, .status-expired { background: #eef0f4; color: var(--muted); }
.status-waiting { background: #efe8fb; color: var(--wait); }
.status-executing, .status-dequeued, .status-active { background: #e3effb; color: var(--run); }
.status-queued, .status-delayed, .status-pending_version { background: #fdf3d8; color: var(--warn); }
.tag { display: inline-block; padding: 0 6px; border-radius: 4px; background: #eef0f4; font-size: 12px; margin: 1px 0; }
pre.json { background: #f3f5f8; border: 1px solid var(--line); border-radius: 6px; padding: 10px; overflow: auto; max-height: 420px; white-space: pre-wrap; word-break: break-word; margin: 0; }
form.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: flex-end; margin-bottom: 14px; }
form.filters label { display: flex; flex-direction: column; gap: 3px; font-size: 12px; color: var(--muted); }
input, select, textarea, button { font: inherit; padding: 5px 8px; border: 1px solid #c9ced8; border-radius: 6px; background: #fff; color: var(--fg); }
textarea { width: 100%; min-height: 160px; font-family: ui-monospace, Menlo, Consolas, monospace; }
button { cursor: pointer; background: var(--accent); border-color: var(--accent); color: #fff; }
button.secondary { background: #fff; color: var(--fg); border-color: #c9ced8; } button.danger { background: var(--bad); border-color: var(--bad); }
header.top button { background: transparent; border-color: #4a556b; color: #dfe4ee; }
.actions { display: flex; gap: 8px; margin: 10px 0 16px; } .actions form { margin: 0; }
.pager { display: flex; gap: 12px; margin-top: 12px; }
.problem { color: var(--bad); background: #fde8e7; padding: 8px 12px; border-radius: 6px; }
.notice { color: var(--ok); background: #e3f4e8; padding: 8px 12px; border-radius: 6px; }
section.login form { display: flex; flex-direction: column; gap: 12px; } section.login label { display: flex; flex-direction: column; gap: 4px; }
.live { font-size: 12px; color: var(--muted); } .live::before { content: "● "; color: var(--ok); }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; } @media (max-width: 900px) { .grid2 { grid-template-columns: 1fr; } }
.tl-relatives, .tl-waiting-on { margin: 0 0 8px; }
.tl-table th.tl-what { font-weight: 400; color: var(--fg); text-transform: none; letter-spacing: 0; font-size: 13px; }
.tl-kind { display: inline-block; min-width: 56px; font-size: 11px; text-transform: uppercase; color: var(--muted); }
.tl-label { font-weight: 600; } .tl-detail { color: var(--muted); font-size: 12px; } .tl-error { color: var(--bad); }
.tl-caption { caption-side: top; text-align: left; padding: 0 0 6px; color: var(--muted); font-size: 12px; }
.tl-span { width: 38%; min-width: 160px; } .tl-bar { display: block; width: 100%; height: 12px; background: #f0f2f5; border-radius: 3px; }
.tl-bar-fill { fill: var(--run); } .tl-kind-step .tl-bar-fill { fill: var(--ok); } .tl-kind-wait .tl-bar-fill { fill: var(--wait); }
.tl-kind-attempt .tl-bar-fill { fill: #8a94a8; } .tl-kind-child .tl-bar-fill { fill: var(--warn); }
.tl-status-failed .tl-bar-fill, .tl-status-crashed .tl-bar-fill, .tl-status-timed-out .tl-bar-fill { fill: var(--bad); }
.tl-ongoing .tl-bar-fill { opacity: .55; } .tl-start, .tl-duration { white-space: nowrap; font-size: 12px; }
.tl-legend, .tl-truncated { color: var(--muted); font-size: 12px; }
.tl-depth-1 .tl-what { padding-left: 22px; } .tl-depth-2 .tl-what { padding-left: 44px; }
.tl-kind-log .tl-bar-fill { fill: #8a94a8; } .tl-level-warn .tl-bar-fill { fill: var(--warn); } .tl-level-error .tl-bar-fill { fill: var(--bad); }
.tl-level-warn .tl-status { color: var(--warn); } .tl-level-error .tl-status, .tl-level-error .tl-message { color: var(--bad); } .tl-level-debug .tl-message { color: var(--muted); }
.tl-message { white-space: pre-wrap; word-break: break-word; } .tl-attributes { font-size: 11px; color: var(--muted); word-break: break-all; }
.tl-log-filter { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; margin: 0 0 8px; font-size: 13px; }
.tl-visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.records { max-height: 480px; overflow: auto; }
a.button { display: inline-block; padding: 5px 10px; border: 1px solid var(--accent); border-radius: 6px; background: var(--accent); color: #fff; }
a.button.secondary { background: #fff; color: var(--fg); border-color: #c9ced8; } a.button:hover { text-decoration: none; }
.problem-text { color: var(--bad); }
form.filters label.search input { width: 240px; }
form.bulk { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-bottom: 14px; font-size: 13px; }
.child-of { font-size: 12px; color: var(--muted); margin: 2px 0 0; } p.child-of { font-size: 13px; margin: -8px 0 12px; }
table.runs tr.child td:first-child { border-left: 3px solid #dfe3ea; }
table.runs tr.depth-1 td:first-child { padding-left: 22px; } table.runs tr.depth-2 td:first-child { padding-left: 34px; }
table.runs tr.depth-3 td:first-child { padding-left: 46px; } table.runs tr.depth-4 td:first-child { padding-left: 58px; }
ul.recent-runs { list-style: none; margin: 0; padding: 0; } ul.recent-runs li { white-space: nowrap; font-size: 12px; }
.scroll { overflow-x: auto; }
/* Narrow screens (a phone, 420 px): the header wraps onto rows, the environment switcher gets a row
   of its own, the views scroll sideways, and wide tables scroll inside their box instead of the page. */
@media (max-width: 700px) {
  header.top { flex-wrap: wrap; gap: 8px 12px; padding: 8px 12px; }
  header.top .spacer { display: none; }
  nav.envs { order: 10; flex-basis: 100%; }
  nav.envs a { flex: 1; text-align: center; padding: 8px 4px; border: 1px solid #2c3547; }
  form.signout { margin-left: auto; } form.signout .muted { display: none; }
  .picker { min-width: 0; } .picker summary { max-width: 200px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .picker ul { min-width: 0; width: calc(100vw - 24px); }
  nav.sections { overflow-x: auto; padding: 0 8px; white-space: nowrap; }
  main { padding: 12px; }
  main table { display: block; overflow-x: auto; } main td { white-space: nowrap; }
  form.filters label { width: calc(50% - 5px); } form.filters label input, form.filters label select { width: 100%; min-width: 0; }
  form.filters label.search, form.filters label.search input { width: 100%; }
  pre.json { max-width: calc(100vw - 60px); }
  dl.facts { grid-template-columns: 1fr; gap: 2px; } dl.facts dd { margin-bottom: 6px; overflow-wrap: anywhere; }
  h1 { overflow-wrap: anywhere; }
}
`;
