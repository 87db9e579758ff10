// The entries of one session as JS values (EntryCache), and the stand-in messages of entries
// whose lines were not read yet (StandIn).
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
/** The role code of an entry whose line must be read (native EntryBatch). */
const NOT_PLAIN = 255;
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
 * The sequence number of a plain entry handed out before its line was read, kept on the entry
 * itself as a private field: invisible to every reflection (keys, JSON, spreading), and
 * cheaper to set and to collect than a WeakMap's entry (one per entry of a long path).
 */
class Unread extends Stamped {
  #seq;

  /** Marks `entry` as unread, the entry of `seq`. */
  static mark(entry, seq) {
    new Unread(entry).#seq = seq;
  }

  /** The sequence number of an unread entry; undefined once read (or never marked). */
  static seqOf(entry) {
    return #seq in entry ? entry.#seq : undefined;
  }

  static has(entry) {
    return Unread.seqOf(entry) !== undefined;
  }

  static clear(entry) {
    entry.#seq = undefined;
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

/**
 * The traps of a stand-in message, and its state: the role before the line is read, then
 * everything from the target, filled with the message (no other trap is needed: the default
 * ones act on the target, which is the message once read).
 */
class StandIn {
  constructor(cache, seq, role) {
    this.cache = cache;
    this.seq = seq;
    this.role = role;
    this.filled = false;
    /** Objects handed out before the line was read (a message's `usage`), by key. */
    this.early = undefined;
    this.target = {};
    this.proxy = new Proxy(this.target, this);
  }

  /** Takes the message read from the entry's line. */
  fill(message) {
    if (this.filled) return;
    this.filled = true;
    // An object handed out before stays the message's own: it was parsed from the same bytes.
    if (this.early !== undefined) for (const [key, value] of this.early) message[key] = value;
    Object.assign(this.target, message);
  }

  read() {
    if (!this.filled) this.cache.read(this.seq);
  }

  get(target, key, receiver) {
    if (!this.filled) {
      const role = ROLE_NAMES[this.role];
      if (key === "role" && role) return role;
      // A short field is read alone (pi scans every assistant message's provider and model,
      // and its footer every one's usage); a long one (the content) comes with the whole line.
      if (typeof key === "string" && !(key in Object.prototype)) {
        const value = this.cache.peek(this.seq, key);
        if (value !== NOT_IN_HEAD) {
          if (typeof value === "object" && value !== null) (this.early ??= new Map()).set(key, value);
          return value;
        }
      }
      this.read();
    }
    return Reflect.get(target, key, receiver);
  }

  has(target, key) {
    this.read();
    return Reflect.has(target, key);
  }

  ownKeys(target) {
    this.read();
    return Reflect.ownKeys(target);
  }

  getOwnPropertyDescriptor(target, key) {
    this.read();
    return Reflect.getOwnPropertyDescriptor(target, key);
  }

  set(target, key, value, receiver) {
    this.read();
    return Reflect.set(target, key, value, receiver);
  }

  deleteProperty(target, key) {
    this.read();
    return Reflect.deleteProperty(target, key);
  }

  defineProperty(target, key, descriptor) {
    this.read();
    return Reflect.defineProperty(target, key, descriptor);
  }

  preventExtensions(target) {
    this.read();
    return Reflect.preventExtensions(target);
  }
}

/**
 * The entries of one session as JS values, kept as pi keeps every entry it parsed: the same
 * object wherever an entry is handed out (getEntry, getBranch, getEntries, the projection's
 * sourceEntry, whose `message` is the projection's message), so pi's callers that compare
 * entries or messages by identity find them. An entry is keyed by its sequence number, its
 * place among the log's lines, which never changes; a plain message entry is handed out before
 * its line is read (see Unread). Beside them, the active path and the entries in file
 * order, kept and caught up with what changed: a repeat call costs a copy of the array, an
 * append or a move of the leaf costs the entries it adds.
 */
export class EntryCache {
  #native;
  /** Entry values by sequence number (a holey array: only the entries handed out so far). */
  #bySeq = [];
  // Plain message entries handed out before their line was read carry their sequence number
  // (Unread). Such an entry's `timestamp` and `message` are own accessors (#onUse) that read
  // the line when first used and then become plain data properties: keys, their order,
  // JSON.stringify and spreading are those of the parsed line.
  /** Role codes of the unread entries, by sequence number (a stand-in answers `role`). */
  #roles = [];
  /**
   * Stand-in messages by sequence number: a message asked for before its entry's line is read
   * (pi's agent scans every message's role on resume) is a stand-in that knows its role and
   * reads the line on any other use. It stays the entry's message once read: identity holds.
   */
  #standIns = new Map();
  /** Projection plans by leaf (planText). */
  #plans = new Map();
  /** The read-ahead window of #readAround, and where it last read. */
  #window = 2;
  #lastRead = -1;
  /** The heads of unread messages read on their own (peek), by sequence number. */
  #heads = new Map();
  /** The model origins of unread assistant messages (peek), by sequence number (holey). */
  #origins = [];
  /** The heads of model origins, by sequence number: one per provider and model in use. */
  #originHeads = new Map();
  #onUse;
  /** The path from the root to #pathLeaf (a sequence number; null: empty). */
  #path = [];
  #pathLeaf = null;
  /** Every entry in file order, and the first sequence number not looked at yet. */
  #all = [];
  #allNext = 0;

  constructor(native) {
    this.#native = native;
    const cache = this;
    this.#onUse = {
      timestamp: {
        get() {
          return cache.#materialize(this).timestamp;
        },
        set(value) {
          cache.#materialize(this).timestamp = value;
        },
        enumerable: true,
        configurable: true,
      },
      message: {
        get() {
          const seq = Unread.seqOf(this);
          if (seq === undefined) return this.message;
          let standIn = cache.#standIns.get(seq);
          if (standIn === undefined) {
            standIn = new StandIn(cache, seq, cache.#roles[seq]);
            cache.#standIns.set(seq, standIn);
          }
          return standIn.proxy;
        },
        set(value) {
          cache.#materialize(this).message = value;
        },
        enumerable: true,
        configurable: true,
      },
    };
  }

  /** A plain message entry, handed out before its line is read. */
  #plainEntry(seq, id, parentId, role) {
    const entry = { type: "message", id, parentId };
    // Two defineProperty calls with shared descriptors cost half of one defineProperties.
    Object.defineProperty(entry, "timestamp", this.#onUse.timestamp);
    Object.defineProperty(entry, "message", this.#onUse.message);
    Unread.mark(entry, seq);
    this.#roles[seq] = role;
    return entry;
  }

  /** Reads the line of the entry `seq`, if it was not read yet. */
  read(seq) {
    const entry = this.#bySeq[seq];
    if (entry !== undefined) this.#materialize(entry);
  }

  /** Reads the line of an unread entry (`values`: its parse, when already at hand). */
  #materialize(entry, values) {
    const seq = Unread.seqOf(entry);
    if (seq === undefined) return entry;
    if (values === undefined) {
      this.#readAround(seq);
      return entry;
    }
    Unread.clear(entry);
    this.#heads.delete(seq);
    this.#origins[seq] = undefined;
    let message = values.message;
    const standIn = this.#standIns.get(seq);
    if (standIn !== undefined) {
      standIn.fill(message);
      message = standIn.proxy;
      this.#standIns.delete(seq);
    }
    Object.defineProperty(entry, "timestamp", { value: values.timestamp, writable: true, enumerable: true, configurable: true });
    Object.defineProperty(entry, "message", { value: message, writable: true, enumerable: true, configurable: true });
    return entry;
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
      const entry = this.#bySeq[at];
      if (entry !== undefined && Unread.has(entry)) seqs.push(at);
    }
    const values = this.parse(seqs);
    for (let i = 0; i < seqs.length; i++) this.#materialize(this.#bySeq[seqs[i]], values[i]);
  }

  /**
   * The value of the field `key` of the unread message entry `seq`'s message when it is short
   * (undefined when absent), or NOT_IN_HEAD (a long value, or a message whose fields the
   * index half could not read alone); read with the heads of the unread entries around it,
   * in one call. An object is the head's own, the same on every call until the line is read.
   */
  peek(seq, key) {
    if (!HEAD_KEYS.has(key)) return NOT_IN_HEAD;
    // An assistant's provider and model are those of its model origin, an earlier message
    // with the same two values: a scan of every assistant's (pi, on every projection) reads
    // the head of one message per model in use.
    if (MODEL_KEYS.has(key) && this.#roles[seq] === ASSISTANT) {
      const origin = this.#originOf(seq);
      if (origin !== NO_ORIGIN && origin !== seq) {
        let head = this.#originHeads.get(origin);
        if (head === undefined) {
          head = JSON.parse(this.#native.messageHeadsJson(Uint32Array.of(origin)))[0];
          this.#originHeads.set(origin, head);
        }
        return headField(head, key);
      }
    }
    if (!this.#heads.has(seq)) {
      // Scans ask the messages of one role for the same fields (pi: every assistant's provider
      // and model): the heads of the unread messages of that role around it come along.
      const seqs = this.#unreadAround(seq, (at) => this.#heads.has(at));
      const heads = JSON.parse(this.#native.messageHeadsJson(Uint32Array.from(seqs)));
      for (let i = 0; i < seqs.length; i++) this.#heads.set(seqs[i], heads[i]);
    }
    return headField(this.#heads.get(seq), key);
  }

  /** The model origin of the unread assistant message `seq`, asked with those around it. */
  #originOf(seq) {
    if (this.#origins[seq] === undefined) {
      const seqs = this.#unreadAround(seq, (at) => this.#origins[at] !== undefined);
      const origins = this.#native.modelOrigins(Uint32Array.from(seqs));
      for (let i = 0; i < seqs.length; i++) this.#origins[seqs[i]] = origins[i];
    }
    return this.#origins[seq];
  }

  /** `seq` and the unread entries of its role around it that are not `known` yet. */
  #unreadAround(seq, known) {
    const role = this.#roles[seq];
    const seqs = [];
    for (let at = Math.max(0, seq - READ_AROUND); at < seq + READ_AROUND; at++) {
      const entry = this.#bySeq[at];
      if (entry !== undefined && this.#roles[at] === role && Unread.has(entry) && !known(at)) seqs.push(at);
    }
    return seqs;
  }

  /** Keeps `entry` as the value of `seq` (an entry this manager just appended). */
  remember(seq, entry) {
    this.#bySeq[seq] = entry;
  }

  at(seq) {
    return this.#bySeq[seq] ?? this.load([seq])[0];
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
   * The entries of a native EntryBatch, in its order: plain message entries handed out from
   * what the index knows, the others read from their lines.
   */
  adopt(batch) {
    const { seqs, roles } = batch;
    const ids = batch.ids === "" ? [] : batch.ids.split("\n");
    const parents = batch.parents === "" && ids.length === 0 ? [] : batch.parents.split("\n");
    const toRead = [];
    // A path's parentId is the id of the entry before it: the one string serves both.
    let previousId = null;
    for (let i = 0, plain = 0; i < seqs.length; i++) {
      const seq = seqs[i];
      if (roles[i] === NOT_PLAIN) {
        if (this.#bySeq[seq] === undefined) toRead.push(seq);
        previousId = null;
        continue;
      }
      const parent = parents[plain];
      const parentId = parent === "" ? null : parent === previousId ? previousId : parent;
      this.#bySeq[seq] ??= this.#plainEntry(seq, ids[plain], parentId, roles[i]);
      previousId = this.#bySeq[seq].id;
      plain++;
    }
    const values = this.parse(toRead);
    for (let i = 0; i < toRead.length; i++) this.#bySeq[toRead[i]] ??= values[i];
    const out = new Array(seqs.length);
    for (let i = 0; i < seqs.length; i++) out[i] = this.#bySeq[seqs[i]];
    return out;
  }

  /** The entries of `seqs` (an array-like of sequence numbers), handing out the missing ones. */
  load(seqs) {
    const missing = [];
    for (let i = 0; i < seqs.length; i++) if (this.#bySeq[seqs[i]] === undefined) missing.push(seqs[i]);
    for (let start = 0; start < missing.length; start += LINES_PER_READ) {
      this.adopt(this.#native.indexedEntries(Uint32Array.from(missing.slice(start, start + LINES_PER_READ))));
    }
    const out = new Array(seqs.length);
    for (let i = 0; i < seqs.length; i++) out[i] = this.#bySeq[seqs[i]];
    return out;
  }

  /** The entries of `seqs`, every line read: values a caller passes on (a model's context). */
  loadRead(seqs) {
    // Entries not handed out yet are parsed from their lines at once, as pi holds them.
    const missing = [];
    for (let i = 0; i < seqs.length; i++) if (this.#bySeq[seqs[i]] === undefined) missing.push(seqs[i]);
    const parsed = this.parse(missing);
    for (let i = 0; i < missing.length; i++) this.#bySeq[missing[i]] ??= parsed[i];
    const entries = this.load(seqs);
    const pending = [];
    for (let i = 0; i < entries.length; i++) if (Unread.has(entries[i])) pending.push(i);
    if (pending.length > 0) {
      const values = this.parse(pending.map((i) => seqs[i]));
      for (let k = 0; k < pending.length; k++) this.#materialize(entries[pending[k]], values[k]);
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
      const tail = this.adopt(since);
      for (let i = 0; i < tail.length; i++) this.#path.push(tail[i]);
      this.#pathLeaf = leaf;
    }
    return this.#path;
  }

  /** The path from the root to `id`, or [] for an unknown id. */
  pathTo(id) {
    const path = this.path();
    const since = this.#native.pathSince(id, this.#pathLeaf);
    if (since === null) return [];
    const out = path.slice(0, since.kept);
    const tail = this.adopt(since);
    for (let i = 0; i < tail.length; i++) out.push(tail[i]);
    return out;
  }

  /** Every entry in file order (the cached array itself: callers copy it). */
  all() {
    if (this.#all.length !== this.#native.entryCount()) {
      // Most entries are usually held already (the path): only the others are asked for.
      const seqs = this.#native.entrySeqsFrom(this.#allNext);
      const added = this.load(seqs);
      for (let i = 0; i < added.length; i++) this.#all.push(added[i]);
      if (seqs.length > 0) this.#allNext = seqs[seqs.length - 1] + 1;
    }
    return this.#all;
  }
}

