// A page using @trigger.dev/react-hooks as an application would, against svc: bundled by
// test/realtime-browser.test.ts with esbuild and served from another origin than the API.
// What it shows is read back by the test from data attributes.
import { createRoot } from "react-dom/client";
import { useRealtimeRun, useRealtimeRunsWithTag } from "@trigger.dev/react-hooks";

const params = new URLSearchParams(location.hash.slice(1));
const baseURL = params.get("api")!;

function RunView(props: { runId: string; accessToken: string }) {
  const { run, error } = useRealtimeRun(props.runId, { accessToken: props.accessToken, baseURL });
  return (
    <section id="run" data-status={run?.status ?? ""} data-error={error?.message ?? ""}>
      <pre id="run-output">{run?.output === undefined ? "" : JSON.stringify(run.output)}</pre>
      <pre id="run-metadata">{run?.metadata === undefined ? "" : JSON.stringify(run.metadata)}</pre>
    </section>
  );
}

function TagView(props: { tag: string; accessToken: string }) {
  const { runs, error } = useRealtimeRunsWithTag(props.tag, { accessToken: props.accessToken, baseURL, createdAt: "1h" });
  return (
    <ul id="tagged" data-count={runs.length} data-error={error?.message ?? ""}>
      {runs.map((run) => (
        <li key={run.id} data-id={run.id} data-status={run.status}>
          {run.id}
        </li>
      ))}
    </ul>
  );
}

createRoot(document.getElementById("root")!).render(
  <>
    <RunView runId={params.get("run")!} accessToken={params.get("runToken")!} />
    <TagView tag={params.get("tag")!} accessToken={params.get("tagToken")!} />
  </>,
);
