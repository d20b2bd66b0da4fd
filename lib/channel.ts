// A channel: one two-way line between two peers (a remote database client and
// its server, a multiProcess client and its owner, a client tab and the owner
// tab), whatever carries the messages: a MessagePort, a worker's postMessage,
// BroadcastChannels, a Unix socket. Every transport implements this interface
// (adapters/remote/channel.ts for the message-passing ones,
// hosts/node/socket-channel.ts for a socket); the remote protocol speaks only
// to it. Here, below the adapters and the hosts, so that both implement one
// interface (the lint's layer rules let neither import the other).
//
// The types are structural (no DOM or node typings): the same module runs in
// Node and in browsers.

export interface Channel<Out = unknown, In = unknown> {
  /** Posts `message`; the buffers in `transfer` change owner. Dropped once the channel closed. */
  send (message: Out, transfer?: ArrayBuffer[]): void
  /**
   * Sets the handlers (replacing any set before): `onMessage` for each message
   * in arrival order, `onClose` once when the channel ends (the other side went
   * away or failed: `reason` says how when known; or close() here).
   */
  receive (onMessage: (message: In) => void, onClose?: (reason?: Error) => void): void
  /** Ends the channel here; the other side sees it closed if its transport tells it. */
  close (): void
}
