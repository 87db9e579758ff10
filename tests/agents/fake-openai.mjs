// A fake OpenAI Responses API for Codex CLI, on 127.0.0.1 only: it answers every
// `POST .../responses` with a scripted, streamed reply chosen from the request's input, so that
// the real client writes a real rollout without a model.
//
// The script, by the request's last input item (words in capitals are the test's own commands):
//   a compaction request     -> a summary, checked first;
//   a function call's output -> a text reply naming the output's first line;
//   "RUN <cmd>"              -> a reasoning item and an `exec_command` call of <cmd>;
//   anything else            -> a text reply quoting the prompt.
// Every reply reports `BIG_USAGE` input tokens when the prompt says "BIG", so that the client's
// auto-compaction limit is passed. Every request is recorded for the caller's checks, with its
// input in short: the last request of a rollout is the context the client sent.
import http from "node:http";
import { writeFileSync } from "node:fs";

const BIG_USAGE = 200_000;

const textOf = (content) =>
  typeof content === "string"
    ? content
    : (content ?? [])
        .filter((c) => c.type === "input_text" || c.type === "output_text" || c.type === "text")
        .map((c) => c.text)
        .join("\n");

function lastItem(input) {
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i];
    if (item.type === "function_call_output") {
      const out = typeof item.output === "string" ? item.output : JSON.stringify(item.output);
      return { toolResult: out };
    }
    if ((item.type === "message" || item.role) && item.role === "user") {
      const text = textOf(item.content);
      if (!text.startsWith("<environment_context>") && !text.startsWith("# AGENTS.md") && text.trim() !== "") return { text };
    }
  }
  return { text: "" };
}

function plan(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  const tail = JSON.stringify(input.slice(-2));
  if (/context checkpoint compaction|handoff summary|summarize the conversation|CONTEXT CHECKPOINT/i.test(tail)) {
    return [{ type: "text", text: "Summary: the user ran `ls` and `wc -l notes.txt`; nothing is pending." }];
  }
  const last = lastItem(input);
  if (last.toolResult !== undefined) {
    let out = last.toolResult;
    const m = /Output:\n([\s\S]*)/.exec(out);
    if (m) out = m[1];
    return [{ type: "text", text: `The command printed: ${out.trim().split("\n")[0].slice(0, 80)}` }];
  }
  const m = /RUN (.+)/.exec(last.text);
  if (m) {
    return [
      { type: "reasoning", text: "The user wants a command run; exec_command does it." },
      { type: "function_call", name: "exec_command", arguments: JSON.stringify({ cmd: m[1].trim() }) },
    ];
  }
  return [{ type: "text", text: `You said: ${last.text.trim().slice(0, 120)}` }];
}

/** The request's input in short: per item its type (and role) with the first 60 characters of
 * its text, or its call id: what the client sent, in order. */
function digest(input) {
  return input.map((item) => {
    if (item.type === "message" || (item.role && !item.type)) return `${item.role}:${textOf(item.content).slice(0, 60)}`;
    if (item.type === "function_call") return `function_call:${item.name}:${item.call_id}`;
    if (item.type === "function_call_output") return `function_call_output:${item.call_id}`;
    if (item.type === "reasoning") return "reasoning";
    return item.type;
  });
}

function stream(res, body, blocks, n, big) {
  res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": `req_fake_${n}` });
  let seq = 0;
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  const id = `resp_fake_${String(n).padStart(4, "0")}`;
  const response = { id, object: "response", created_at: 1796600000 + n, status: "in_progress", model: body.model, output: [] };
  ev("response.created", { response });
  const output = [];
  blocks.forEach((b, output_index) => {
    let item;
    if (b.type === "text") {
      item = { id: `msg_fake_${n}_${output_index}`, type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: b.text, annotations: [] }] };
      ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } });
      ev("response.output_text.delta", { output_index, item_id: item.id, content_index: 0, delta: b.text });
    } else if (b.type === "reasoning") {
      item = { id: `rs_fake_${n}_${output_index}`, type: "reasoning", summary: [{ type: "summary_text", text: b.text }] };
      ev("response.output_item.added", { output_index, item: { ...item, summary: [] } });
    } else {
      item = { id: `fc_fake_${n}_${output_index}`, type: "function_call", status: "completed", call_id: `call_fake_${String(n).padStart(4, "0")}`, name: b.name, arguments: b.arguments };
      ev("response.output_item.added", { output_index, item: { ...item, arguments: "" } });
    }
    ev("response.output_item.done", { output_index, item });
    output.push(item);
  });
  const input_tokens = big ? BIG_USAGE : 1200 + 10 * n;
  ev("response.completed", {
    response: {
      ...response,
      status: "completed",
      output,
      usage: { input_tokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: input_tokens + 20 },
    },
  });
  res.end();
}

/** Starts the server on 127.0.0.1 (a free port); resolves to { url, requests, close() }. */
export function startFakeOpenAI() {
  const requests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const n = requests.length + 1;
      let body = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        body = {};
      }
      const path = req.url ?? "";
      const record = { n, method: req.method, path, model: body.model };
      requests.push(record);
      if (process.env.TREELOG_AGENTS_DUMP) writeFileSync(`${process.env.TREELOG_AGENTS_DUMP}/openai-${n}.json`, raw);
      if (req.method === "POST" && path.endsWith("/responses")) {
        const blocks = plan(body);
        const input = Array.isArray(body.input) ? body.input : [];
        record.last = lastItem(input);
        record.sent = digest(input);
        record.reply = blocks.map((b) => b.type + (b.name ? `:${b.name}` : "")).join(",");
        const big = /BIG/.test(record.last.text ?? "");
        stream(res, body, blocks, n, big);
      } else {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { type: "not_found", message: `no ${path}` } }));
      }
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(r)) });
    });
  });
}
