// Writes context-edits.json: what pi's JSON.parse makes of each line below, computed once
// with Node 24 (the one bindings/node installs), for tests/it/json_parse_vectors.rs:
//   node tests/data/json_parse/make-vectors.mjs > tests/data/json_parse/context-edits.json
// Per line: `valid` (JSON.parse accepts it) and, when it is an object with a string `targetId`
// and a `replacement` key, the edit as pi 1.6's projectContextEntry reads it: the target's
// UTF-8 bytes (hex), whether the replacement removes the entry, and `replacement.content`:
// "undefined", its UTF-8 bytes when a string (hex; a lone surrogate is written as U+FFFD, as
// Buffer.from writes it), or "other".
const deep = (n) => "[".repeat(n) + "]".repeat(n);
const lines = [
  '{"type":"context_edit","id":"e1","targetId":"m1","replacement":null}',
  '{"targetId":"m1","replacement":{"content":"plain"}}',
  '{"targetId":"m1","replacement":null,"note":"\\ud800"}',
  '{"targetId":"m1","replacement":{"content":"a\\ud800b\\udc00c\\ud83d\\ude00"}}',
  '{"targetId":"m2","targetId":"m1","replacement":{"content":"x"},"replacement":null}',
  '{"targetId":"m1","replacement":null,"replacement":{"content":"first","content":"last"}}',
  `{"targetId":"m1","replacement":null,"x":${deep(1000)}}`,
  `{"targetId":"m1","replacement":{"content":"deep"},"x":${deep(200)}}`,
  '{"targetId":"m1","replacement":{"content":1e400}}',
  '{"targetId":"m1","replacement":null,"n":-1e999,"m":123456789012345678901234567890}',
  '{"t\\u0061rgetId":"m\\u0031","r\\u0065placement":{"c\\u006fntent":"esc"}}',
  '{"targetId":"m1","replacement":"text"}',
  '{"targetId":"m1","replacement":5}',
  '{"targetId":"m1","replacement":[]}',
  '{"targetId":"m1","replacement":{}}',
  '{"targetId":"m1","replacement":{"content":[{"type":"text","text":"t"}]}}',
  '{"targetId":"m1"}',
  '{"targetId":7,"replacement":null}',
  '{"targetId":"m1","replacement":null,"\\udc00":1}',
  ' \t{"targetId":"m1","replacement":null}\r ',
  '{"targetId":"m1","replacement":null,}',
  '{"targetId":"m1","replacement":nul}',
  '{"targetId":"m1","replacement":"\u0001"}',
  '{"targetId":"m1","replacement":null} x',
  '[{"targetId":"m1","replacement":null}]',
  '{"targetId":"m1","replacement":{"content":"\\u0000\\u001b]0;x\\u0007"}}',
];
const hex = (text) => Buffer.from(text).toString("hex");
const vectors = lines.map((line) => {
  let parsed;
  try {
    parsed = JSON.parse(line);
  } catch {
    return { line, valid: false, edit: null };
  }
  const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(parsed) || typeof parsed.targetId !== "string" || !("replacement" in parsed)) {
    return { line, valid: true, edit: null };
  }
  const replacement = parsed.replacement;
  const content = replacement === null ? undefined : isObject(replacement) || Array.isArray(replacement) ? replacement.content : undefined;
  return {
    line,
    valid: true,
    edit: {
      target: hex(parsed.targetId),
      remove: replacement === null,
      content: content === undefined ? "undefined" : typeof content === "string" ? hex(content) : "other",
    },
  };
});
process.stdout.write(JSON.stringify(vectors, null, 1) + "\n");
