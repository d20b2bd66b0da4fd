// The top entries of V8 CPU profiles (`node --cpu-prof`, or BENCH_CPU_PROF of
// fresh.ts): self time per function, summed over each profile's samples, with
// its share of the profile's sampled time (idle excluded), and the same summed
// by module file.
//
//   node dist/benchmarks/profile-top.js FILE.cpuprofile [more files] [--top 20] [--callers NAME]
//
// --callers NAME: the self time of functions named NAME, by the chain of their
// three nearest callers.
import * as fs from 'node:fs'
import * as path from 'node:path'

interface CallFrame { functionName: string, url: string, lineNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame, hitCount?: number, children?: number[] }
interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[], startTime: number, endTime: number }

/** Self time in microseconds per function (name, file, line), and the profile's total and idle time. */
function selfTimes (profile: Profile): { byFunction: Map<string, number>, total: number, idle: number } {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
  const byFunction = new Map<string, number>()
  let total = 0
  let idle = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const frame = nodes.get(profile.samples[i])!.callFrame
    const dt = profile.timeDeltas[i + 1] ?? 0
    total += dt
    if (frame.functionName === '(idle)') { idle += dt; continue }
    const name = `${frame.functionName || '(anonymous)'} ${frame.url === '' ? '' : path.basename(frame.url) + ':' + (frame.lineNumber + 1)}`
    byFunction.set(name, (byFunction.get(name) ?? 0) + dt)
  }
  return { byFunction, total, idle }
}

/** Self time of the functions named `name`, by their three nearest callers. */
function callers (profile: Profile, name: string): Map<string, number> {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const label = (id: number): string => {
    const f = nodes.get(id)!.callFrame
    return `${f.functionName || '(anonymous)'}${f.url === '' ? '' : ':' + (f.lineNumber + 1)}`
  }
  const out = new Map<string, number>()
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]
    if (nodes.get(id)!.callFrame.functionName !== name) continue
    const chain = []
    for (let p = parent.get(id); p !== undefined && chain.length < 3; p = parent.get(p)) chain.push(label(p))
    const key = chain.join(' < ')
    out.set(key, (out.get(key) ?? 0) + (profile.timeDeltas[i + 1] ?? 0))
  }
  return out
}

function main (): void {
  const args = process.argv.slice(2)
  const at = args.indexOf('--top')
  const top = at >= 0 ? Number(args.splice(at, 2)[1]) : 20
  const by = args.indexOf('--callers')
  const callersOf = by >= 0 ? args.splice(by, 2)[1] : undefined
  for (const file of args) {
    const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile
    if (callersOf !== undefined) {
      console.log(`${path.basename(file)}: callers of ${callersOf}`)
      for (const [chain, us] of [...callers(profile, callersOf)].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${(us / 1000).toFixed(1).padStart(7)} ms  ${chain}`)
      continue
    }
    const { byFunction, total, idle } = selfTimes(profile)
    const busy = total - idle
    console.log(`${path.basename(file)}: ${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms not idle`)
    const rows = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)
    for (const [name, us] of rows) console.log(`  ${(100 * us / busy).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(1).padStart(7)} ms  ${name}`)
  }
}

main()
