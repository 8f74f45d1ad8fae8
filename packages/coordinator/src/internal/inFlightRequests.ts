/**
 * The coordinator's requests in flight: by its own request id, and by the client's id for
 * them (an ABORT names the client's id). A client may reuse an id once its request is done; the
 * client-side index then points at the newest request.
 *
 * @since 0.1.0
 * @internal
 */

/** @internal */
export class InFlightRequests<R extends { readonly clientKey: string; readonly clientRequestId: number }> {
  private readonly byId = new Map<number, R>()
  private readonly byClient = new Map<string, Map<number, number>>()

  get size(): number {
    return this.byId.size
  }

  add(requestId: number, request: R): void {
    this.byId.set(requestId, request)
    let ids = this.byClient.get(request.clientKey)
    if (ids === undefined) {
      ids = new Map()
      this.byClient.set(request.clientKey, ids)
    }
    ids.set(request.clientRequestId, requestId)
  }

  get(requestId: number): R | undefined {
    return this.byId.get(requestId)
  }

  /** The coordinator's id of the client's request `clientRequestId`, while it is in flight. */
  idOf(clientKey: string, clientRequestId: number): number | undefined {
    return this.byClient.get(clientKey)?.get(clientRequestId)
  }

  /** The requests in flight for which `predicate` holds, with their ids. */
  filter(predicate: (request: R) => boolean): Array<readonly [number, R]> {
    const out: Array<readonly [number, R]> = []
    for (const entry of this.byId) if (predicate(entry[1])) out.push(entry)
    return out
  }

  /** Takes the request out (it completed), or `undefined` when it is not in flight. */
  remove(requestId: number): R | undefined {
    const request = this.byId.get(requestId)
    if (request === undefined) return undefined
    this.byId.delete(requestId)
    const ids = this.byClient.get(request.clientKey)
    if (ids?.get(request.clientRequestId) === requestId) {
      ids.delete(request.clientRequestId)
      if (ids.size === 0) this.byClient.delete(request.clientKey)
    }
    return request
  }
}
