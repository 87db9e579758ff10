// (c) treelog's own declarations (index.d.ts, `import ... from "treelog"`): every public method of
// its SessionManager and every exported function, called with arguments of the declared types,
// each result kept in a variable of the type it is declared to return. Compiled, never run. The
// two lists at the end fail when index.d.ts gains a method or an export this file does not call.
import type { IndexNotice, StoreOptions } from "treelog";
import {
  CURRENT_SESSION_VERSION,
  SessionManager,
  assertValidSessionId,
  buildContextEntries,
  buildSessionContext,
  buildSessionProjection,
  findMostRecentSession,
  getDefaultSessionDir,
  getLatestCompactionEntry,
  loadEntriesFromFile,
  migrateSessionEntries,
  parseSessionEntries,
  projectContextEntry,
  reindexSearch,
  search,
  sessionEntryToContextMessages,
} from "treelog";
import type * as treelog from "treelog";
import type {
  AgentMessage,
  CompactionEntry,
  ContextEditEntry,
  FileEntry,
  ReadonlySessionManager,
  SearchHit,
  SearchNotice,
  SearchProgress,
  SearchReindexed,
  SessionContext,
  SessionEntry,
  SessionHeader,
  SessionInfo,
  SessionProjection,
  SessionTreeNode,
  UsageEntry,
} from "treelog";

type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends (<T>() => T extends Y ? 1 : 2) ? true : false;
function same<X, Y>(equal: Equal<X, Y>): void {
  void equal;
}

export async function everyMethod(file: string, dir: string): Promise<void> {
  const version: 3 = CURRENT_SESSION_VERSION;

  // ---- the factories ----
  const created: SessionManager = SessionManager.create("/work/project", dir, { id: "0123abcd", parentSession: file });
  const opened: SessionManager = SessionManager.open(file, dir, "/work/elsewhere");
  const store: StoreOptions = { onConflict: "fail", indexDir: dir, indexWrite: false, onNotice: (notice: IndexNotice) => void notice.code };
  const openedWith: SessionManager = SessionManager.open(file, dir, undefined, store);
  const createdWith: SessionManager = SessionManager.create("/work/project", dir, { id: "0123abcd", onConflict: "follow" });
  const recent: SessionManager = SessionManager.continueRecent("/work/project", dir, { onConflict: "branch" });
  const header: FileEntry = { type: "session", version, id: "0123abcd", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/work/project" };
  const memory: SessionManager = SessionManager.inMemory("/work/project", { id: "0123abcd" }, [header]);
  const forked: SessionManager = SessionManager.forkFrom(file, "/work/project", dir, { parentSession: file });
  const found: string | undefined = SessionManager.findById("/work/project", "0123abcd", dir);
  const abort = new AbortController();
  const onProgress = (loaded: number, total: number, partial?: readonly SessionInfo[]): void => {
    void [loaded, total, partial];
  };
  const listed: SessionInfo[] = await SessionManager.list("/work/project", dir, onProgress, abort.signal);
  const all: SessionInfo[] = await SessionManager.listAll(onProgress, abort.signal);
  const allIn: SessionInfo[] = await SessionManager.listAll(dir, onProgress, abort.signal);

  // ---- the instance ----
  const session = created;
  session.setSessionFile(file);
  session.refresh();
  void [openedWith, createdWith];
  const newFile: string | undefined = session.newSession({ id: "4567cdef" });
  const persisted: boolean = session.isPersisted();
  const cwd: string = session.getCwd();
  const sessionDir: string = session.getSessionDir();
  const usesDefault: boolean = session.usesDefaultSessionDir();
  const sessionId: string = session.getSessionId();
  const sessionFile: string | undefined = session.getSessionFile();
  const userId: string = session.appendMessage({ role: "user", content: "hello", timestamp: 1 });
  const assistantId: string = session.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "hi" }],
    provider: "faux",
    model: "m",
    timestamp: 2,
  });
  const thinkingId: string = session.appendThinkingLevelChange("high");
  const modelId: string = session.appendModelChange("faux", "m");
  const usage: UsageEntry = session.appendUsage("cache_warm", "faux", "m", { input: 1, output: 2 }, "a note");
  const compactionId: string = session.appendCompaction<{ kept: number }>("summary", userId, 1000, { kept: 1 }, false, { input: 3 });
  const compactionFromNull: string = session.appendCompaction("summary", null, 10);
  const customId: string = session.appendCustomEntry("my-extension", { state: 1 });
  const infoId: string = session.appendSessionInfo("a name");
  const name: string | undefined = session.getSessionName();
  const customMessageId: string = session.appendCustomMessageEntry<{ x: number }>(
    "my-extension",
    [{ type: "text", text: "note" }, { type: "image", data: "AAAA", mimeType: "image/png" }],
    true,
    { x: 1 },
  );
  const customMessageText: string = session.appendCustomMessageEntry("my-extension", "note", false);
  const editId: string = session.appendContextEdit(assistantId, { content: [{ type: "text", text: "edited" }] });
  const omitId: string = session.appendContextEdit(userId, null);
  const leafId: string | null = session.getLeafId();
  const leaf: SessionEntry | undefined = session.getLeafEntry();
  const entry: SessionEntry | undefined = session.getEntry(userId);
  const children: SessionEntry[] = session.getChildren(userId);
  const label: string | undefined = session.getLabel(userId);
  const labelId: string = session.appendLabelChange(userId, "bookmark");
  const unlabelId: string = session.appendLabelChange(userId, undefined);
  const branchPath: SessionEntry[] = session.getBranch();
  const branchFrom: SessionEntry[] = session.getBranch(userId);
  const contextEntries: SessionEntry[] = session.buildContextEntries();
  const projection: SessionProjection = session.buildSessionProjection();
  const context: SessionContext = session.buildSessionContext();
  const sessionHeader: SessionHeader | null = session.getHeader();
  const count: number = session.getEntryCount();
  const entries: SessionEntry[] = session.getEntries();
  const tree: SessionTreeNode[] = session.getTree();
  session.branch(userId);
  session.resetLeaf();
  const summaryId: string = session.branchWithSummary(userId, "left behind", { why: 1 }, true, { input: 4 });
  const summaryAtRoot: string = session.branchWithSummary(null, "from the start");
  const branched: string | undefined = session.createBranchedSession(assistantId);
  const readonly: ReadonlySessionManager = opened;

  // ---- the functions ----
  assertValidSessionId("0123abcd");
  const fileEntries: FileEntry[] = parseSessionEntries('{"type":"session","id":"0123abcd"}\n');
  migrateSessionEntries(fileEntries);
  const latest: CompactionEntry | null = getLatestCompactionEntry(entries);
  const messages: AgentMessage[] = sessionEntryToContextMessages(entries[0]);
  const byId = new Map<string, SessionEntry>(entries.map((e) => [e.id, e]));
  const active: SessionEntry[] = buildContextEntries(entries, leafId, byId);
  const activeAtLeaf: SessionEntry[] = buildContextEntries(entries);
  const edit: ContextEditEntry | undefined = entries.find((e): e is ContextEditEntry => e.type === "context_edit");
  const projected: AgentMessage[] = projectContextEntry(entries[0], edit);
  const builtProjection: SessionProjection = buildSessionProjection(entries, null, byId);
  const builtContext: SessionContext = buildSessionContext(entries, leafId);
  const defaultDir: string = getDefaultSessionDir("/work/project", "/home/me/.pi/agent");
  const loaded: FileEntry[] = loadEntriesFromFile(file);
  const mostRecent: string | null = findMostRecentSession(dir, "/work/project");
  const notices: SearchNotice[] = [];
  const progress: SearchProgress[] = [];
  const hits: SearchHit[] = await search('hello "a phrase" -not pre*', [dir, file], {
    role: "assistant",
    type: "message",
    since: "2026-01-01",
    until: "2026-12-31T23:59:59Z",
    limit: 5,
    sort: "newest",
    indexDir: "/tmp/index",
    indexWrite: false,
    onNotice: (notice) => notices.push(notice),
    onProgress: (p) => progress.push(p),
  });
  const hitsHere: SearchHit[] = await search("hello", process.cwd());
  const hitsOne: SearchHit[] = await search("hello", file);
  const hitsNone: SearchHit[] = await search("hello", []);
  const reindexed: SearchReindexed = await reindexSearch(dir, { force: true, indexDir: "/tmp/index", onNotice: (n) => notices.push(n) });

  void [recent, memory, forked, found, listed, all, allIn, newFile, persisted, cwd, sessionDir, usesDefault, sessionId,
    sessionFile, thinkingId, modelId, usage, compactionId, compactionFromNull, customId, infoId, name, customMessageId,
    customMessageText, editId, omitId, leaf, entry, children, label, labelId, unlabelId, branchPath, branchFrom,
    contextEntries, projection, context, sessionHeader, count, tree, summaryId, summaryAtRoot, branched, readonly,
    latest, messages, active, activeAtLeaf, projected, builtProjection, builtContext, defaultDir, loaded, mostRecent,
    hits, hitsHere, hitsOne, hitsNone, reindexed];
}

// Every method and static of SessionManager is called above, and every value export is used.
same<
  keyof SessionManager,
  | "setSessionFile" | "refresh" | "newSession" | "isPersisted" | "getCwd" | "getSessionDir" | "usesDefaultSessionDir"
  | "getSessionId" | "getSessionFile" | "appendMessage" | "appendThinkingLevelChange" | "appendModelChange"
  | "appendUsage" | "appendCompaction" | "appendCustomEntry" | "appendSessionInfo" | "getSessionName"
  | "appendCustomMessageEntry" | "appendContextEdit" | "getLeafId" | "getLeafEntry" | "getEntry" | "getChildren"
  | "getLabel" | "appendLabelChange" | "getBranch" | "buildContextEntries" | "buildSessionProjection"
  | "buildSessionContext" | "getHeader" | "getEntryCount" | "getEntries" | "getTree" | "branch" | "resetLeaf"
  | "branchWithSummary" | "createBranchedSession"
>(true);
same<
  Exclude<keyof typeof SessionManager, "prototype">,
  "create" | "open" | "continueRecent" | "inMemory" | "forkFrom" | "findById" | "list" | "listAll"
>(true);
type ValueExports = { [K in keyof typeof treelog]: (typeof treelog)[K] extends never ? never : K }[keyof typeof treelog];
same<
  ValueExports,
  | "CURRENT_SESSION_VERSION" | "SessionManager" | "assertValidSessionId" | "migrateSessionEntries"
  | "parseSessionEntries" | "getLatestCompactionEntry" | "sessionEntryToContextMessages" | "buildContextEntries"
  | "projectContextEntry" | "buildSessionProjection" | "buildSessionContext" | "getDefaultSessionDir"
  | "loadEntriesFromFile" | "findMostRecentSession" | "search" | "reindexSearch"
>(true);
