// A page using @trigger.dev/react-hooks' useRealtimeRunWithStreams as an application would,
// against svc: bundled by test/streams-browser.test.ts with esbuild and served from another origin
// than the API. Its button sends to the run's input stream with the trigger's public token. What
// it shows is read back by the test from data attributes.
import { createRoot } from "react-dom/client";
import { useRealtimeRunWithStreams } from "@trigger.dev/react-hooks";

const params = new URLSearchParams(location.hash.slice(1));
const baseURL = params.get("api")!;
const runId = params.get("run")!;
const accessToken = params.get("runToken")!;

async function sendGo(): Promise<void> {
  const response = await fetch(`${baseURL}/realtime/v1/streams/${runId}/input/go`, {
    method: "POST",
    headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
    body: JSON.stringify({ data: { from: "browser" } }),
  });
  document.body.dataset.sent = String(response.status);
}

function RunView() {
  const { run, streams, error } = useRealtimeRunWithStreams<never, { tokens: { text: string } }>(runId, { accessToken, baseURL });
  const tokens = streams.tokens ?? [];
  return (
    <section id="run" data-status={run?.status ?? ""} data-error={error?.message ?? ""}>
      <button id="go" onClick={() => void sendGo()}>
        go
      </button>
      <ul id="tokens" data-count={tokens.length}>
        {tokens.map((token, i) => (
          <li key={i}>{token.text}</li>
        ))}
      </ul>
      <pre id="run-output">{run?.output === undefined ? "" : JSON.stringify(run.output)}</pre>
    </section>
  );
}

createRoot(document.getElementById("root")!).render(<RunView />);
