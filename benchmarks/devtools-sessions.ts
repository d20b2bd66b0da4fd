// DevTools sessions on a page of headless Chromium and on its engine worker
// (lsm-level-worker.js), found through Target.setAutoAttach: what the CPU
// profilers of the browser benchmarks send Profiler.* commands through.
import type { Page } from '../test/browser/harness'

/** The DevTools session as used here (playwright-core's CDPSession). */
interface Session {
  send (method: string, params?: object): Promise<any>
  on (event: string, listener: (event: any) => void): void
}

/** Sends a DevTools command; resolves to its result. */
export type Send = (method: string, params?: object) => Promise<any>

/** Senders of DevTools commands to `page` and to its engine worker. */
export async function devtoolsSessions (context: { newCDPSession (page: Page): Promise<unknown> }, page: Page): Promise<{ page: Send, worker: Send }> {
  const cdp = await context.newCDPSession(page) as Session
  const workers: Array<{ sessionId: string, targetInfo: { url: string } }> = []
  const waiting = new Map<number, (reply: any) => void>()
  let nextId = 1
  cdp.on('Target.attachedToTarget', (event) => workers.push(event))
  cdp.on('Target.receivedMessageFromTarget', (event) => {
    const reply = JSON.parse(event.message)
    waiting.get(reply.id)?.(reply)
    waiting.delete(reply.id)
  })
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false })
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const engine = workers.find((w) => w.targetInfo.url.includes('lsm-level-worker'))
  if (engine === undefined) throw new Error('the engine worker was not found among ' + workers.map((w) => w.targetInfo.url).join(', '))
  return {
    page: async (method, params) => await cdp.send(method, params),
    worker: async (method, params = {}) => await new Promise((resolve) => {
      const id = nextId++
      waiting.set(id, (reply) => resolve(reply.result))
      cdp.send('Target.sendMessageToTarget', { sessionId: engine.sessionId, message: JSON.stringify({ id, method, params }) }).catch(() => {})
    })
  }
}
