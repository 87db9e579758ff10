// The entries of one session as JS values (EntryCache), and the stand-in messages of entries
// whose lines were not read yet (Pending, StandInTraps).
import { native } from "./native.js";

/** How many entries one native read hands back at most: bounds the text held at once. */
const LINES_PER_READ = 4096;
/** The most sequence numbers around an entry read on use that are looked at for unread ones. */
const READ_AROUND = 512;
/** The message fields the native half reads without the whole line (MESSAGE_HEAD_KEYS). */
const HEAD_KEYS = new Set(native.messageHeadKeys());
/** How many leaves' projection plans a manager keeps. */
const PLANS_KEPT = 4;
/** What EntryCache.peek answers for a field whose value comes only with the whole line. */
const NOT_IN_HEAD = Symbol("not in the head");

/** Role names by the index's role codes (0: none; 15, or past the table: another string). */
const ROLE_NAMES = ["", ...native.roleNames()];
/**
 * The codes of a native EntryBatch: the role code of an entry whose line must be read, where a
 * plain entry's parentId is (null; the next listed one; else an index into the batch), and the
 * length of each plain entry's timestamp.
 */
const [NOT_PLAIN, PARENT_NULL, PARENT_LISTED, TIMESTAMP_LEN] = native.entryBatchCodes();
const ASSISTANT = ROLE_NAMES.indexOf("assistant");
/** The fields an assistant message shares with its model origin (native modelOrigins). */
const MODEL_KEYS = new Set(["provider", "model"]);
/** "No model origin" in native modelOrigins' answer. */
const NO_ORIGIN = 0xffffffff;

/** Hands back the object it is given: a subclass's private fields are then put on that object. */
class Stamped {
  constructor(target) {
    return target;
  }
}

/**
 * The message of an unread plain entry is a stand-in: a Proxy over an empty object, its
 * target, which becomes the message itself once the line is read (the line's fields are put
 * on it, in their order, and the entry's `message` is then the target, a plain object that
 * structuredClone and JSON take as pi's parse). Before the read, the stand-in answers its
 * role, and the short fields of its head, without the line; any other use reads the line.
 * The state is kept on the target as private fields.
 */
class Pending extends Stamped {
  /** The entry's sequence number times 16 plus its role code while the line is unread, else -1. */
  #code;
  #proxy;
  /** The message's head (EntryCache.peek), once asked for: `[{KEY: VALUE}, [LONG KEY]]` or null. */
  #head;
  /** An assistant's model origin (native modelOrigins), once asked for. */
  #origin;

  /** The target of a stand-in for the message of the unread entry `seq` (role code `role`). */
  static make(seq, role, traps) {
    const target = new Pending({});
    target.#code = seq * 16 + (role & 15);
    target.#proxy = new Proxy(target, traps);
    return target;
  }

  static proxy(target) {
    return target.#proxy;
  }

  /** The entry's sequence number while the line is unread, else -1. */
  static seq(target) {
    return target.#code < 0 ? -1 : Math.floor(target.#code / 16);
  }

  /** The role code (15 for a role the index names no code for). */
  static role(target) {
    return target.#code % 16;
  }

  static head(target) {
    return target.#head;
  }

  static setHead(target, head) {
    target.#head = head;
  }

  static origin(target) {
    return target.#origin;
  }

  static setOrigin(target, origin) {
    target.#origin = origin;
  }

  /** Puts the message read from the line on the target. */
  static fill(target, message) {
    if (target.#code < 0) return;
    target.#code = -1;
    // An object handed out from the head stays the message's own: it was parsed from the
    // same bytes.
    const values = target.#head?.[0];
    if (values) {
      for (const key in values) {
        const value = values[key];
        if (typeof value === "object" && value !== null && Object.hasOwn(message, key)) message[key] = value;
      }
    }
    target.#head = undefined;
    target.#origin = undefined;
    Object.assign(target, message);
  }
}

/**
 * The traps of every stand-in of one EntryCache: the default behaviour on the target once the
 * line is read (the target is then the message), the line read first otherwise.
 */
class StandInTraps {
  constructor(cache) {
    this.cache = cache;
  }

  /** Reads the line of the target's entry, if it was not read yet. */
  settle(target) {
    const seq = Pending.seq(target);
    if (seq >= 0) this.cache.read(seq);
  }

  get(target, key, receiver) {
    const seq = Pending.seq(target);
    if (seq >= 0) {
      if (key === "role") {
        const role = ROLE_NAMES[Pending.role(target)];
        if (role) return role;
      }
      // A short field is read alone (pi scans every assistant message's provider and model,
      // and its footer every one's usage); a long one (the content) comes with the whole line.
      if (typeof key === "string" && HEAD_KEYS.has(key)) {
        const value = this.cache.peek(target, seq, key);
        if (value !== NOT_IN_HEAD) return value;
      }
      this.cache.read(seq);
    }
    return Reflect.get(target, key, receiver);
  }

  has(target, key) {
    this.settle(target);
    return Reflect.has(target, key);
  }

  ownKeys(target) {
    this.settle(target);
    return Reflect.ownKeys(target);
  }

  getOwnPropertyDescriptor(target, key) {
    this.settle(target);
    return Reflect.getOwnPropertyDescriptor(target, key);
  }

  set(target, key, value, receiver) {
    this.settle(target);
    return Reflect.set(target, key, value, receiver);
  }

  deleteProperty(target, key) {
    this.settle(target);
    return Reflect.deleteProperty(target, key);
  }

  defineProperty(target, key, descriptor) {
    this.settle(target);
    return Reflect.defineProperty(target, key, descriptor);
  }

  preventExtensions(target) {
    this.settle(target);
    return Reflect.preventExtensions(target);
  }
}

/**
 * The value of `key` in a message head (`[{KEY: VALUE, ...}, [KEY, ...]]`, or null for a
 * message whose fields the native half could not read alone), or NOT_IN_HEAD.
 */
function headField(head, key) {
  if (head === null || head === undefined || head[1].includes(key)) return NOT_IN_HEAD;
  return Object.hasOwn(head[0], key) ? head[0][key] : undefined;
}

/** Slots per page of a SeqTable (a power of two). */
const PAGE_BITS = 12;
const PAGE_SLOTS = 1 << PAGE_BITS;

/**
 * Values by sequence number, in pages of PAGE_SLOTS slots made on first use. A plain array
 * set far past its end becomes a hash table (V8's dictionary elements), and a session's
 * entries are often first asked for from its end (the context), then all of them (the path):
 * pages keep every set and get an indexed load however the first ones were spread.
 */
class SeqTable {
  #pages = [];

  get(seq) {
    const page = this.#pages[seq >>> PAGE_BITS];
    return page === undefined ? undefined : page[seq & (PAGE_SLOTS - 1)];
  }

  set(seq, value) {
    const at = seq >>> PAGE_BITS;
    while (this.#pages.length <= at) this.#pages.push(undefined);
    const page = (this.#pages[at] ??= new Array(PAGE_SLOTS).fill(undefined));
    page[seq & (PAGE_SLOTS - 1)] = value;
  }

  /** Sets `seq` to `value` unless it holds a value already. */
  setMissing(seq, value) {
    if (this.get(seq) === undefined) this.set(seq, value);
  }

  /** The sequence numbers of `seqs` (an array-like) that hold no value, in order. */
  missingOf(seqs) {
    const pages = this.#pages;
    const missing = [];
    for (let i = 0; i < seqs.length; i++) {
      const seq = seqs[i];
      const page = pages[seq >>> PAGE_BITS];
      if (page === undefined || page[seq & (PAGE_SLOTS - 1)] === undefined) missing.push(seq);
    }
    return missing;
  }

  /** The values of `seqs` (an array-like), appended to `out`; one loop, no call per value. */
  valuesOf(seqs, out) {
    const pages = this.#pages;
    const base = out.length;
    for (let i = 0; i < seqs.length; i++) {
      const seq = seqs[i];
      const page = pages[seq >>> PAGE_BITS];
      out[base + i] = page === undefined ? undefined : page[seq & (PAGE_SLOTS - 1)];
    }
    return out;
  }
}

/**
 * The entries of one session as JS values, kept as pi keeps every entry it parsed: the same
 * object wherever an entry is handed out (getEntry, getBranch, getEntries, the projection's
 * sourceEntry, whose `message` is the projection's message), so pi's callers that compare
 * entries or messages by identity find them. An entry is keyed by its sequence number, its
 * place among the log's lines, which never changes; a plain message entry is handed out whole
 * from the index but for its message, a stand-in until its line is read (Pending; the
 * stand-ins' targets are kept by sequence number until then).
 * Beside them, the active path and the entries in file order, kept and caught up with what
 * changed: a repeat call costs a copy of the array, an append or a move of the leaf costs the
 * entries it adds.
 */
export class EntryCache {
  #native;
  /** Entry values by sequence number: only the entries handed out so far. */
  #bySeq = new SeqTable();
  /** The stand-in targets of the plain entries handed out before their lines were read. */
  #unread = new SeqTable();
  #traps = new StandInTraps(this);
  /** Projection plans by leaf (planText). */
  #plans = new Map();
  /** The read-ahead window of #readAround, and where it last read. */
  #window = 2;
  #lastRead = -1;
  /** The heads of model origins, by sequence number: one per provider and model in use. */
  #originHeads = new Map();
  /** The path from the root to #pathLeaf (a sequence number; null: empty). */
  #path = [];
  #pathLeaf = null;
  /** Every entry in file order, and the first sequence number not looked at yet. */
  #all = [];
  #allNext = 0;

  constructor(native) {
    this.#native = native;
  }

  /** A plain message entry, handed out before its line is read. */
  #plainEntry(seq, id, parentId, timestamp, role) {
    const target = Pending.make(seq, role, this.#traps);
    this.#unread.set(seq, target);
    return { type: "message", id, parentId, timestamp, message: Pending.proxy(target) };
  }

  /** The role code of the unread entry `seq`, or -1. */
  #unreadRole(seq) {
    const target = this.#targetOf(seq);
    return target === undefined ? -1 : Pending.role(target);
  }

  /** Reads the line of the entry `seq`, if it was not read yet. */
  read(seq) {
    this.#materialize(seq);
  }

  /** Reads the line of the entry `seq` if unread (`values`: its parse, when already at hand). */
  #materialize(seq, values) {
    const target = this.#unread.get(seq);
    if (target === undefined) return;
    if (values === undefined) {
      this.#readAround(seq);
      return;
    }
    this.#unread.set(seq, undefined);
    Pending.fill(target, values.message);
    // A message the caller put on the entry stays; the stand-in gives way to its target (not
    // on an entry the caller froze: the stand-in stays, and reads as its target).
    const entry = this.#bySeq.get(seq);
    if (entry.message === Pending.proxy(target)) Reflect.set(entry, "message", target);
  }

  /**
   * Reads the line of the unread entry `seq` and of the unread entries around it, in one call:
   * pi's callers scan paths and lists, whose entries lie close together in the log, so the
   * lines a scan reads next are read with this one instead of one call each.
   */
  #readAround(seq) {
    // The window grows while reads on use come close together (a scan) and shrinks back when
    // they jump (a tree's branch points): a scan costs a call per window, sparse reads stay
    // sparse.
    this.#window = Math.abs(seq - this.#lastRead) <= this.#window ? Math.min(READ_AROUND, this.#window * 4) : 2;
    this.#lastRead = seq;
    const seqs = [];
    for (let at = Math.max(0, seq - this.#window / 2); at < seq + this.#window / 2; at++) {
      if (this.#unread.get(at) !== undefined) seqs.push(at);
    }
    const values = this.parse(seqs);
    for (let i = 0; i < seqs.length; i++) this.#materialize(seqs[i], values[i]);
  }

  /**
   * The value of the field `key` (one of HEAD_KEYS) of the message of the unread entry `seq`,
   * whose stand-in's target is `target`, when it is short (undefined when absent), or
   * NOT_IN_HEAD (a long value, or a message whose fields the index half could not read
   * alone); read with the heads of the unread entries around it, in one call. An object is
   * the head's own, the same on every call, and the message's once its line is read.
   */
  peek(target, seq, key) {
    // An assistant's provider and model are those of its model origin, an earlier message
    // with the same two values: a scan of every assistant's (pi, on every projection) reads
    // the head of one message per model in use.
    if (MODEL_KEYS.has(key) && Pending.role(target) === ASSISTANT) {
      if (Pending.origin(target) === undefined) {
        const seqs = this.#unreadAround(seq, (other) => Pending.origin(other) !== undefined);
        const origins = this.#native.modelOrigins(Uint32Array.from(seqs));
        for (let i = 0; i < seqs.length; i++) Pending.setOrigin(this.#targetOf(seqs[i]), origins[i]);
      }
      const origin = Pending.origin(target);
      if (origin !== NO_ORIGIN && origin !== seq) {
        let head = this.#originHeads.get(origin);
        if (head === undefined) {
          head = JSON.parse(this.#native.messageHeadsJson(Uint32Array.of(origin)))[0];
          this.#originHeads.set(origin, head);
        }
        return headField(head, key);
      }
    }
    if (Pending.head(target) === undefined) {
      // Scans ask the messages of one role for the same fields (pi: every assistant's provider
      // and model): the heads of the unread messages of that role around it come along.
      const seqs = this.#unreadAround(seq, (other) => Pending.head(other) !== undefined);
      const heads = JSON.parse(this.#native.messageHeadsJson(Uint32Array.from(seqs)));
      for (let i = 0; i < seqs.length; i++) Pending.setHead(this.#targetOf(seqs[i]), heads[i]);
    }
    return headField(Pending.head(target), key);
  }

  /** The stand-in target of the unread entry `seq`, or undefined. */
  #targetOf(seq) {
    return this.#unread.get(seq);
  }

  /** `seq` and the unread entries of its role around it whose targets are not `known` yet. */
  #unreadAround(seq, known) {
    const role = this.#unreadRole(seq);
    const seqs = [];
    for (let at = Math.max(0, seq - READ_AROUND); at < seq + READ_AROUND; at++) {
      const target = this.#targetOf(at);
      if (target !== undefined && Pending.role(target) === role && !known(target)) seqs.push(at);
    }
    return seqs;
  }

  /** Keeps `entry` as the value of `seq` (an entry this manager just appended). */
  remember(seq, entry) {
    this.#bySeq.set(seq, entry);
  }

  at(seq) {
    return this.#bySeq.get(seq) ?? this.load([seq])[0];
  }

  /** The parsed lines of `seqs`, read in batches (each one JSON array: one parse a batch). */
  parse(seqs) {
    const out = [];
    for (let start = 0; start < seqs.length; start += LINES_PER_READ) {
      const batch = Uint32Array.from(seqs.slice(start, start + LINES_PER_READ));
      const values = JSON.parse(this.#native.linesJsonArray(batch));
      for (let i = 0; i < values.length; i++) out.push(values[i]);
    }
    return out;
  }

  /**
   * The entries of a native EntryBatch, in its order, appended to `out`: plain message entries
   * handed out from what the index knows, the others read from their lines.
   */
  adopt(batch, out = new Array(0)) {
    const { seqs, roles, parentAt, timestamps } = batch;
    const count = seqs.length;
    const ids = count === 0 ? [] : batch.ids.split("\n");
    // Each listed parent id follows a "\n": the first element is empty.
    const parents = batch.parents.split("\n");
    const toRead = [];
    for (let i = 0; i < count; i++) {
      if (roles[i] === NOT_PLAIN && this.#bySeq.get(seqs[i]) === undefined) toRead.push(seqs[i]);
    }
    const values = this.parse(toRead);
    for (let i = 0; i < toRead.length; i++) this.#bySeq.setMissing(toRead[i], values[i]);
    const base = out.length;
    out.length = base + count;
    for (let i = 0, listed = 1, plain = 0; i < count; i++) {
      const seq = seqs[i];
      const at = parentAt[i];
      let entry = this.#bySeq.get(seq);
      if (roles[i] !== NOT_PLAIN) {
        if (entry === undefined) {
          const parentId = at >= 0 ? ids[at] : at === PARENT_NULL ? null : parents[listed];
          const timestamp = timestamps.substring(plain * TIMESTAMP_LEN, (plain + 1) * TIMESTAMP_LEN);
          entry = this.#plainEntry(seq, ids[i], parentId, timestamp, roles[i]);
          this.#bySeq.set(seq, entry);
        }
        if (at === PARENT_LISTED) listed++;
        plain++;
      }
      out[base + i] = entry;
    }
    return out;
  }

  /**
   * The entries of `seqs` (an array-like of sequence numbers), handing out the missing ones,
   * appended to `out` (default a new array).
   */
  load(seqs, out = []) {
    const missing = this.#bySeq.missingOf(seqs);
    for (let start = 0; start < missing.length; start += LINES_PER_READ) {
      this.adopt(this.#native.indexedEntries(Uint32Array.from(missing.slice(start, start + LINES_PER_READ))));
    }
    return this.#bySeq.valuesOf(seqs, out);
  }

  /** The entries of `seqs`, every line read: values a caller passes on (a model's context). */
  loadRead(seqs) {
    // Entries not handed out yet are parsed from their lines at once, as pi holds them.
    const missing = this.#bySeq.missingOf(seqs);
    const parsed = this.parse(missing);
    for (let i = 0; i < missing.length; i++) this.#bySeq.setMissing(missing[i], parsed[i]);
    const entries = this.load(seqs);
    const pending = [];
    for (let i = 0; i < seqs.length; i++) if (this.#unread.get(seqs[i]) !== undefined) pending.push(seqs[i]);
    if (pending.length > 0) {
      const values = this.parse(pending);
      for (let k = 0; k < pending.length; k++) this.#materialize(pending[k], values[k]);
    }
    return entries;
  }

  /**
   * The projection plan of the leaf `seq` as JSON (`treelog::ProjectionPlan`), kept for the
   * last few leaves: a leaf's context depends on its ancestors only, which never change.
   */
  planText(seq) {
    let text = this.#plans.get(seq);
    if (text === undefined) {
      text = this.#native.projectionPlanJson();
      if (this.#plans.size >= PLANS_KEPT) this.#plans.delete(this.#plans.keys().next().value);
      this.#plans.set(seq, text);
    }
    return text;
  }

  byId(id) {
    const seq = this.#native.entrySeq(id);
    return seq === null ? undefined : this.at(seq);
  }

  /** The active path (the cached array itself: callers copy it). */
  path() {
    const leaf = this.#native.leafSeq();
    if (leaf !== this.#pathLeaf) {
      const since = this.#native.pathSince(null, this.#pathLeaf);
      this.#path.length = since.kept;
      this.adopt(since, this.#path);
      this.#pathLeaf = leaf;
    }
    return this.#path;
  }

  /** The path from the root to `id`, or [] for an unknown id. */
  pathTo(id) {
    const path = this.path();
    const since = this.#native.pathSince(id, this.#pathLeaf);
    if (since === null) return [];
    return this.adopt(since, path.slice(0, since.kept));
  }

  /** Every entry in file order (the cached array itself: callers copy it). */
  all() {
    if (this.#all.length !== this.#native.entryCount()) {
      // Most entries are usually held already (the path): only the others are asked for.
      const seqs = this.#native.entrySeqsFrom(this.#allNext);
      this.load(seqs, this.#all);
      if (seqs.length > 0) this.#allNext = seqs[seqs.length - 1] + 1;
    }
    return this.#all;
  }
}

