// A fake Anthropic Messages API for Claude Code, on 127.0.0.1 only: it answers every
// `POST /v1/messages` with a scripted, streamed reply chosen from the request's last message, so
// that the real client writes a real session without a model.
//
// The script, by the last user text (words in capitals are the test's own commands):
//   a tool result           -> a text reply naming the result's first line;
//   "SUBTASK: RUN <cmd>"    -> (a subagent's first turn) a Bash call of <cmd>;
//   "DELEGATE <task>"       -> an Agent call (general-purpose, in the foreground) whose prompt is
//                              "SUBTASK: RUN wc -l notes.txt";
//   "RUN <cmd>"             -> a Bash call of <cmd> (after a thinking block when "THINK" is there);
//   a compaction request    -> a summary ("<summary>...</summary>"), checked first;
//   anything else           -> a text reply quoting the prompt.
// Every request is recorded (method, path, model, the last user text, and the messages sent in
// short) for the caller's checks: the last request of a session is the context the client sent.
import http from "node:http";
import { writeFileSync } from "node:fs";

const textOf = (content) =>
  typeof content === "string"
    ? content
    : content
        .filter((b) => b.type === "text" && !b.text.startsWith("<system-reminder>"))
        .map((b) => b.text)
        .join("\n");

function lastUser(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== "user") continue;
    if (Array.isArray(m.content) && m.content.some((b) => b.type === "tool_result")) {
      const r = m.content.find((b) => b.type === "tool_result");
      const text = typeof r.content === "string" ? r.content : textOf(r.content ?? []);
      return { toolResult: text };
    }
    const text = textOf(m.content);
    if (text.trim() !== "") return { text };
  }
  return { text: "" };
}

function plan(body) {
  const messages = body.messages ?? [];
  const lastMessage = JSON.stringify(messages.at(-1) ?? {});
  if (lastMessage.includes("Please provide your summary based on the conversation so far")) {
    return [
      {
        type: "text",
        text: "<analysis>The conversation ran three commands.</analysis>\n<summary>\n1. The user listed the files, asked a subagent to count the lines of notes.txt, and printed a long sequence.\n2. Nothing is pending.\n</summary>",
      },
    ];
  }
  const last = lastUser(messages);
  if (last.toolResult !== undefined) {
    const first = last.toolResult.trim().split("\n")[0].slice(0, 80);
    return [{ type: "text", text: `The command printed: ${first}` }];
  }
  const text = last.text;
  let m = /SUBTASK: RUN (.+)/.exec(text);
  if (m) return [{ type: "tool_use", name: "Bash", input: { command: m[1].trim(), description: "Run the subtask's command" } }];
  if (/DELEGATE/.test(text)) {
    return [
      { type: "text", text: "I will ask a subagent." },
      {
        type: "tool_use",
        name: "Agent",
        input: { description: "Count lines", prompt: "SUBTASK: RUN wc -l notes.txt", subagent_type: "general-purpose", run_in_background: false },
      },
    ];
  }
  m = /RUN (.+)/.exec(text);
  if (m) {
    const blocks = [];
    if (/THINK/.test(text)) blocks.push({ type: "thinking", thinking: "The user wants a command run; Bash does it." });
    blocks.push({ type: "text", text: "Running it." });
    blocks.push({ type: "tool_use", name: "Bash", input: { command: m[1].trim(), description: "Run the requested command" } });
    return blocks;
  }
  return [{ type: "text", text: `You said: ${text.trim().slice(0, 120)}` }];
}

/** The request's messages in short: per message its role and, per block, its type with the
 * first 60 characters of its text, or its tool name and id: what the client sent, in order. */
function digest(messages) {
  const block = (b) => {
    if (typeof b === "string") return `text:${b.slice(0, 60)}`;
    if (b.type === "text") return `text:${b.text.slice(0, 60)}`;
    if (b.type === "thinking") return `thinking:${b.thinking.slice(0, 60)}`;
    if (b.type === "tool_use") return `tool_use:${b.name}:${b.id}`;
    if (b.type === "tool_result") return `tool_result:${b.tool_use_id}`;
    return b.type;
  };
  return messages.map((m) => ({ role: m.role, content: typeof m.content === "string" ? [block(m.content)] : m.content.map(block) }));
}

function stream(res, body, blocks, n) {
  res.writeHead(200, { "content-type": "text/event-stream", "request-id": `req_fake_${n}` });
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev("message_start", {
    message: {
      id: `msg_fake_${String(n).padStart(4, "0")}`,
      type: "message",
      role: "assistant",
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 1200 + 10 * n, output_tokens: 1 },
    },
  });
  let toolUse = false;
  blocks.forEach((b, index) => {
    if (b.type === "text") {
      ev("content_block_start", { index, content_block: { type: "text", text: "" } });
      ev("content_block_delta", { index, delta: { type: "text_delta", text: b.text } });
    } else if (b.type === "thinking") {
      ev("content_block_start", { index, content_block: { type: "thinking", thinking: "", signature: "" } });
      ev("content_block_delta", { index, delta: { type: "thinking_delta", thinking: b.thinking } });
      ev("content_block_delta", { index, delta: { type: "signature_delta", signature: "ZmFrZS1zaWduYXR1cmU=" } });
    } else {
      toolUse = true;
      const id = `toolu_fake_${String(n).padStart(4, "0")}_${index}`;
      ev("content_block_start", { index, content_block: { type: "tool_use", id, name: b.name, input: {} } });
      ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) } });
    }
    ev("content_block_stop", { index });
  });
  ev("message_delta", { delta: { stop_reason: toolUse ? "tool_use" : "end_turn", stop_sequence: null }, usage: { output_tokens: 20 } });
  ev("message_stop", {});
  res.end();
}

/** Starts the server on 127.0.0.1 (a free port); resolves to { url, requests, close() }. */
export function startFakeAnthropic() {
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
      if (process.env.TREELOG_AGENTS_DUMP) writeFileSync(`${process.env.TREELOG_AGENTS_DUMP}/anthropic-${n}.json`, raw);
      requests.push(record);
      if (req.method === "POST" && path.startsWith("/v1/messages") && !path.includes("count_tokens")) {
        const blocks = plan(body);
        record.last = lastUser(body.messages ?? []);
        record.sent = digest(body.messages ?? []);
        record.reply = blocks.map((b) => b.type + (b.name ? `:${b.name}` : "")).join(",");
        stream(res, body, blocks, n);
      } else if (req.method === "POST" && path.includes("count_tokens")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ input_tokens: 1000 }));
      } else {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no ${path}` } }));
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
