// (a) An ES module of a TypeScript project with pi 1.6 installed hands treelog's SessionManager
// to pi's createAgentSession, with no cast: `treelog/pi`'s declarations are pi's own.
import { SessionManager } from "treelog/pi";
import { createAgentSession } from "@earendil-works/pi-coding-agent";
import * as treelogPi from "treelog/pi";
import * as pi from "@earendil-works/pi-coding-agent";

export async function startSession(file: string) {
  const { session } = await createAgentSession({ sessionManager: SessionManager.open(file) });
  return session;
}

// Each export of `treelog/pi` that pi's root also exports has exactly pi's type (not merely an
// assignable one, and not `any`); the others are pi's signatures over pi's types.

type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends (<T>() => T extends Y ? 1 : 2) ? true : false;
// `any`, and the error type an unresolved name has under skipLibCheck, extend this; no real type does.
type IsAny<T> = [T] extends [{ readonly __treelogProbe: never }] ? true : false;
type Same<X, Y> = true extends IsAny<X> | IsAny<Y> ? "any" : Equal<X, Y>;
function same<X, Y>(equal: Same<X, Y>): void {
  void equal;
}

same<typeof treelogPi.SessionManager, typeof pi.SessionManager>(true);
same<treelogPi.SessionManager, pi.SessionManager>(true);
same<typeof treelogPi.CURRENT_SESSION_VERSION, typeof pi.CURRENT_SESSION_VERSION>(true);
same<typeof treelogPi.migrateSessionEntries, typeof pi.migrateSessionEntries>(true);
same<typeof treelogPi.parseSessionEntries, typeof pi.parseSessionEntries>(true);
same<typeof treelogPi.getLatestCompactionEntry, typeof pi.getLatestCompactionEntry>(true);
same<typeof treelogPi.sessionEntryToContextMessages, typeof pi.sessionEntryToContextMessages>(true);
same<typeof treelogPi.buildContextEntries, typeof pi.buildContextEntries>(true);
same<typeof treelogPi.buildSessionProjection, typeof pi.buildSessionProjection>(true);
same<typeof treelogPi.buildSessionContext, typeof pi.buildSessionContext>(true);
same<treelogPi.SessionEntry, pi.SessionEntry>(true);
same<treelogPi.FileEntry, pi.FileEntry>(true);
same<treelogPi.SessionHeader, pi.SessionHeader>(true);
same<treelogPi.SessionContext, pi.SessionContext>(true);
same<treelogPi.SessionInfo, pi.SessionInfo>(true);
same<treelogPi.CompactionEntry<{ n: number }>, pi.CompactionEntry<{ n: number }>>(true);
same<treelogPi.AgentMessage, pi.SessionMessageEntry["message"]>(true);
same<ReturnType<typeof treelogPi.loadEntriesFromFile>, pi.FileEntry[]>(true);
same<Parameters<typeof treelogPi.projectContextEntry>, [pi.SessionEntry, pi.ContextEditEntry | undefined]>(true);
same<ReturnType<typeof treelogPi.projectContextEntry>, ReturnType<typeof pi.sessionEntryToContextMessages>>(true);
// and not treelog's own, which pi's functions refuse
same<treelogPi.SessionManager, import("treelog").SessionManager>(false);
