/**
 * The session page's script, served at /dashboard/assets/session-records.js (the CSP allows
 * scripts from this origin only, none inline). It opens the page's record stream
 * (`data-records-stream`, pages/session-stream.ts) with an EventSource, which sends the sign-in
 * cookie and resumes by itself with Last-Event-ID, and appends each `in` / `out` record to its
 * table. Records are written with textContent, never parsed as HTML, so stored text stays text.
 * A record the page already has (by sequence number) is skipped; each table keeps its latest
 * `data-records-cap` rows. Values read as on the server (pages/session-records.ts, recordText).
 */
const SOURCE = String.raw`(function () {
  "use strict";
  var root = document.querySelector("[data-records-stream]");
  if (!root || typeof EventSource !== "function") return;
  var cap = Number(root.getAttribute("data-records-cap")) || 200;
  var maxChars = Number(root.getAttribute("data-records-max-chars")) || 2048;
  var status = root.querySelector("[data-records-status]");
  var channels = {};
  ["in", "out"].forEach(function (io) {
    var body = root.querySelector('tbody[data-records-io="' + io + '"]');
    if (!body) return;
    channels[io] = {
      body: body,
      box: root.querySelector('[data-records-box="' + io + '"]'),
      label: root.querySelector('[data-records-last="' + io + '"]'),
      last: Number(body.getAttribute("data-last-seq")) || 0
    };
  });

  function setStatus(text, live) {
    if (!status) return;
    status.textContent = text;
    status.className = live ? "live" : "muted";
  }
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function utc(ms) {
    var date = new Date(ms);
    return isNaN(date.getTime()) ? "—" : date.toISOString().slice(0, 19).replace("T", " ") + " UTC";
  }
  function recordText(value) {
    if (typeof value === "string") {
      var trimmed = value.trim();
      if (trimmed.charAt(0) === "{" || trimmed.charAt(0) === "[") {
        try { return JSON.stringify(JSON.parse(trimmed), null, 2); } catch (e) { return value; }
      }
      return value;
    }
    var text = JSON.stringify(value, null, 2);
    return text === undefined ? String(value) : text;
  }
  function bodyCell(record) {
    var cell = el("td");
    if (record.body === "") { cell.appendChild(el("span", "muted", "control record")); return cell; }
    var text;
    try { text = recordText(JSON.parse(record.body).data); } catch (e) { text = String(record.body); }
    cell.appendChild(el("pre", "json", text.length > maxChars ? text.slice(0, maxChars) : text));
    if (text.length > maxChars) cell.appendChild(el("p", "muted", "… cut (the whole record is " + text.length + " characters)"));
    return cell;
  }
  function row(record) {
    var tr = el("tr");
    tr.setAttribute("data-seq", String(record.seq_num));
    tr.appendChild(el("td", "mono", String(record.seq_num)));
    var timeCell = el("td");
    var time = el("time", null, utc(record.timestamp));
    if (!isNaN(new Date(record.timestamp).getTime())) {
      time.setAttribute("datetime", new Date(record.timestamp).toISOString());
      time.setAttribute("data-local", "");
    }
    timeCell.appendChild(time);
    tr.appendChild(timeCell);
    var headers = el("td");
    (record.headers || []).forEach(function (header) {
      headers.appendChild(el("span", "tag", header[0] + ": " + header[1]));
      headers.appendChild(document.createTextNode(" "));
    });
    tr.appendChild(headers);
    tr.appendChild(bodyCell(record));
    return tr;
  }
  function receive(io, event) {
    var channel = channels[io];
    var records;
    if (!channel) return;
    try { records = JSON.parse(event.data).records; } catch (e) { return; }
    var box = channel.box;
    var atBottom = !box || box.scrollHeight - box.scrollTop - box.clientHeight < 24;
    records.forEach(function (record) {
      if (!(record.seq_num > channel.last)) return;
      var empty = channel.body.querySelector("tr.empty");
      if (empty) empty.remove();
      channel.body.appendChild(row(record));
      channel.last = record.seq_num;
    });
    while (channel.body.rows.length > cap) channel.body.deleteRow(0);
    channel.body.setAttribute("data-last-seq", String(channel.last));
    if (channel.label && Number(channel.label.textContent) < channel.last) channel.label.textContent = String(channel.last);
    if (box && atBottom) box.scrollTop = box.scrollHeight;
  }

  var source = new EventSource(root.getAttribute("data-records-stream"));
  source.addEventListener("in", function (event) { receive("in", event); });
  source.addEventListener("out", function (event) { receive("out", event); });
  source.addEventListener("end", function () {
    source.close();
    setStatus("The session is no longer active: no new records will arrive.", false);
  });
  source.addEventListener("open", function () { setStatus("Live: new records appear as they are appended.", true); });
  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) setStatus("Disconnected: reload the page to see new records.", false);
    else setStatus("Reconnecting…", false);
  });
  window.addEventListener("pagehide", function () { source.close(); });
  // Back to a page kept in the back/forward cache: its stream was closed, so load it afresh.
  window.addEventListener("pageshow", function (event) { if (event.persisted) window.location.reload(); });
})();
`;

export const SESSION_RECORDS_SCRIPT = { name: "session-records.js", path: "/dashboard/assets/session-records.js", source: SOURCE } as const;
