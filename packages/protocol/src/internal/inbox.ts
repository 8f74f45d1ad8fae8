/**
 * A socket's inbox, shared by the sockets that hand out messages through `receive()` (what
 * `FrameSocket.read` drives): `MemorySocket`'s, and `ZmtpRouter`'s frame socket. Messages wait in
 * order; one receive at a time waits for the next.
 *
 * @since 0.2.0
 * @internal
 */

/** An error with ZeroMQ's `code`, as the sockets' own errors carry one. */
export const socketError = (code: string, message: string): Error => Object.assign(new Error(message), { code })

/** A socket's inbox: messages waiting, and the one receive waiting for them. */
export class Inbox {
  private queue: Array<Array<Buffer>> = []
  private head = 0
  private waiter: { resolve: (message: Array<Buffer>) => void; reject: (error: Error) => void } | undefined
  closed = false

  push(message: Array<Buffer>): void {
    if (this.closed) return
    const waiter = this.waiter
    if (waiter !== undefined) {
      this.waiter = undefined
      return waiter.resolve(message)
    }
    this.queue.push(message)
  }

  receive(): Promise<Array<Buffer>> {
    if (this.closed) return Promise.reject(socketError("EBADF", "Socket is closed"))
    if (this.head < this.queue.length) {
      const message = this.queue[this.head++]!
      if (this.head === this.queue.length) {
        this.queue = []
        this.head = 0
      }
      return Promise.resolve(message)
    }
    if (this.waiter !== undefined) return Promise.reject(socketError("EAGAIN", "Socket is busy reading"))
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }))
  }

  close(): void {
    this.closed = true
    this.queue = []
    const waiter = this.waiter
    this.waiter = undefined
    waiter?.reject(socketError("EBADF", "Socket is closed"))
  }
}

