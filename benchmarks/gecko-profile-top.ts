// The top entries of a Firefox profile written at shutdown (the Gecko
// profiler started with the browser: MOZ_PROFILER_STARTUP=1 and
// MOZ_PROFILER_SHUTDOWN=<file> in the environment of a benchmark that
// launches Firefox, such as `BENCH_BROWSER=firefox node dist/benchmarks/browser.js`),
// within the User Timing measures whose names contain MATCH (the browser
// benchmark's workloads record one each: benchmarks/browser-workloads.ts):
// for each thread that ran in them, in any process (the page's main thread,
// its workers, another tab's), its CPU time and, by its leaf frame (a JavaScript
// function or the label of the browser's code that it was in), where it went.
//
//   node dist/benchmarks/gecko-profile-top.js FILE.json MATCH [--top 15]
import * as fs from 'node:fs'
import * as zlib from 'node:zlib'

interface Table { schema: Record<string, number>, data: unknown[][] }
interface GeckoThread {
  name: string
  tid?: number
  pid?: number | string
  markers: Table
  samples: Table
  stackTable: Table
  frameTable: Table
  stringTable: string[]
}
interface GeckoProfile { meta: { interval: number, startTime: number, sampleUnits?: { threadCPUDelta?: string } }, threads: GeckoThread[], processes?: GeckoProfile[] }
interface Located { thread: GeckoThread, process: GeckoProfile }

/** Every process's threads. */
function threadsOf (profile: GeckoProfile, out: Located[] = []): Located[] {
  for (const thread of profile.threads) out.push({ thread, process: profile })
  for (const child of profile.processes ?? []) threadsOf(child, out)
  return out
}

/** µs per unit of the samples' threadCPUDelta. */
function cpuScale (unit: string | undefined): number {
  return unit === 'ns' ? 1e-3 : unit === 'µs' ? 1 : unit === 'ms' ? 1e3 : NaN
}

/** The measures (name, absolute start and end in ms) whose names contain `match`. */
function measures (thread: GeckoThread, start: number, match: string): Array<{ name: string, from: number, to: number }> {
  const s = thread.markers.schema
  const out: Array<{ name: string, from: number, to: number }> = []
  for (const m of thread.markers.data) {
    const data = m[s.data] as { type?: string, name?: string } | null
    if (data?.type !== 'UserTiming' || data.name === undefined || !data.name.includes(match)) continue
    out.push({ name: data.name, from: start + (m[s.startTime] as number), to: start + (m[s.endTime] as number) })
  }
  return out
}

/**
 * The name of a stack's innermost named frame (a JavaScript function, with
 * its file, or a label of the browser's code; the profile leaves native
 * frames as bare addresses, which are skipped to their caller).
 */
function frameName (thread: GeckoThread, stack: number): string {
  const { prefix, frame } = thread.stackTable.schema
  for (let at: number | null = stack; at !== null; at = thread.stackTable.data[at][prefix] as number | null) {
    const f = thread.stackTable.data[at][frame] as number
    const location = thread.stringTable[thread.frameTable.data[f][thread.frameTable.schema.location] as number]
    if (/^0x[0-9a-f]+$/.test(location)) continue
    return location.replace(/(?:https?|resource|chrome|moz-extension):\/\/[^ )]*\/([^/ )]+)/g, '$1')
  }
  return '(native)'
}

function main (): void {
  const [file, match, ...rest] = process.argv.slice(2)
  if (file === undefined || match === undefined) throw new Error('usage: gecko-profile-top.js FILE.json MATCH [--top N]')
  const top = rest[0] === '--top' ? Number(rest[1]) : 15
  const raw = fs.readFileSync(file)
  const profile = JSON.parse((raw[0] === 0x1f ? zlib.gunzipSync(raw) : raw).toString('utf8')) as GeckoProfile
  const all = threadsOf(profile)
  const found = all.map((t) => ({ ...t, spans: measures(t.thread, t.process.meta.startTime, match) })).find((t) => t.spans.length > 0)
  if (found === undefined) throw new Error(`no User Timing measure whose name contains "${match}"`)
  const { process: where, spans } = found
  const wall = spans.reduce((sum, w) => sum + w.to - w.from, 0)
  console.log(`# ${spans.length} measure(s) "${[...new Set(spans.map((w) => w.name))].join('", "')}": ${wall.toFixed(0)} ms of wall time`)
  // Every thread that ran in the measures' time, in any process (a client tab's owner is another tab's).
  for (const { thread, process: of } of all) {
    const s = thread.samples.schema
    const cpuColumn = s.threadCPUDelta
    const scale = cpuScale(of.meta.sampleUnits?.threadCPUDelta)
    const self = new Map<string, number>()
    let cpu = 0
    let samples = 0
    for (const sample of thread.samples.data) {
      const at = of.meta.startTime + (sample[s.time] as number)
      if (!spans.some((w) => at >= w.from && at <= w.to)) continue
      const stack = sample[s.stack] as number | null
      // CPU time (µs) since the previous sample where the profile has it; else the interval.
      const used = cpuColumn === undefined || Number.isNaN(scale) ? of.meta.interval * 1000 : Number(sample[cpuColumn] ?? 0) * scale
      samples++
      if (stack === null || used === 0) continue
      const name = frameName(thread, stack)
      cpu += used
      self.set(name, (self.get(name) ?? 0) + used)
    }
    if (samples === 0 || cpu === 0) continue
    console.log(`\n## ${thread.name} (process ${thread.pid ?? '?'}${of === where ? ', the measures\' own' : ''}): ${samples} samples, CPU ${(cpu / 1000).toFixed(0)} ms (${(100 * cpu / 1000 / wall).toFixed(0)}% of the wall time)`)
    for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${(us / 1000).toFixed(1).padStart(8)} ms ${(100 * us / cpu).toFixed(1).padStart(5)}%  ${name}`)
    }
  }
}

main()
