// The settings of a Worker node: pushed to a webhook, or pulled from a
// queue by the service's own workers.
import { Field, num, RetryFields, withoutKeys, type PanelProps } from "./shared";

export function WorkerPanel({ node, data, set, onChange }: PanelProps) {
  return (
    <>
      <fieldset className="worker-mode" data-worker-mode={data.queue !== undefined ? "pull" : "push"}>
        <legend>How the work reaches your service</legend>
        <label className="inline">
          <input
            type="radio"
            name={`worker-mode-${node.id}`}
            checked={data.queue === undefined}
            onChange={() => onChange({ ...withoutKeys(data, ["queue", "leaseSeconds"]), webhookUrl: data.webhookUrl ?? "" })}
          />{" "}
          Push: stitchd POSTs it to a webhook
        </label>
        <label className="inline">
          <input
            type="radio"
            name={`worker-mode-${node.id}`}
            checked={data.queue !== undefined}
            onChange={() => onChange({ ...withoutKeys(data, ["webhookUrl", "cancelUrl", "delivery", "rateLimit", "timeoutSeconds"]), queue: data.queue ?? "" })}
          />{" "}
          Pull: it waits in a queue your workers poll
        </label>
      </fieldset>
      {data.queue === undefined ? (
        <>
          <Field label="Webhook URL" id="node-url" hint="stitchd POSTs the work here; your service calls back.">
            <input id="node-url" type="url" placeholder="https://worker.example.com/score" value={data.webhookUrl ?? ""} onChange={(e) => set(["webhookUrl"])(e.target.value)} />
          </Field>
          <Field label="Timeout (seconds)" id="node-timeout" hint="Without a callback or heartbeat by then, the attempt fails. Default 300.">
            <input id="node-timeout" type="number" min={1} value={data.timeoutSeconds ?? ""} onChange={(e) => set(["timeoutSeconds"])(num(e.target.value))} />
          </Field>
        </>
      ) : (
        <>
          <Field label="Queue" id="node-queue" hint="Workers take the work with POST /api/v1/tasks/poll {queue: …} and call back as a pushed worker does.">
            <input id="node-queue" className="mono" placeholder="billing" value={data.queue ?? ""} onChange={(e) => set(["queue"])(e.target.value)} />
          </Field>
          <Field label="Lease (seconds)" id="node-lease" hint="How long a polled task is its worker's; a heartbeat extends it; when it runs out the attempt times out. Default 300.">
            <input id="node-lease" type="number" min={1} max={86400} value={data.leaseSeconds ?? ""} onChange={(e) => set(["leaseSeconds"])(num(e.target.value))} />
          </Field>
        </>
      )}
      <RetryFields retry={data.retry} set={(k) => set(["retry", k])} />
    </>
  );
}
