/**
 * What the client benchmark drives in each subject process (`subject.ts`): the same operations
 * for both implementations, each written in its own idiom (the client's loops run inside Effect,
 * the baseline's in async functions). Its own module, so that the implementations (`baseline.ts`,
 * `clientSubject.ts`) and the process that loads them (`subject.ts`) import it without a circle.
 */
export interface Subject {
  /** n requests in flight at once; resolves when every one has its reply. */
  readonly burst: (n: number) => Promise<void>
  /** n requests one after the other; each round trip, in milliseconds. */
  readonly sequential: (n: number) => Promise<Array<number>>
  readonly close: () => Promise<void>
}

/** Thrown by a subject's `make` when the implementation cannot be measured (not written yet). */
export class Unavailable extends Error {}
