/**
 * The IPC operations every subject of the heap diagnostics answers (`{ id, op }` from the
 * parent): `heap`, heapUsed after a full GC (bytes), and `snapshot`, a heap snapshot written to
 * `path` (V8 collects garbage first).
 */
import { writeHeapSnapshot } from "node:v8"

export const answerHeapOps = (): void => {
  process.on("message", (message: { readonly id?: number; readonly op?: string; readonly path?: string }) => {
    switch (message.op) {
      case "heap": {
        globalThis.gc?.()
        globalThis.gc?.()
        return process.send?.({ id: message.id, heapUsed: process.memoryUsage().heapUsed })
      }
      case "snapshot": {
        globalThis.gc?.()
        return process.send?.({ id: message.id, path: writeHeapSnapshot(message.path) })
      }
    }
  })
}
