/* global document */
// Notes shared by every tab of this page: each tab opens the same database;
// one tab's worker owns it, the others are its clients, and each tab follows
// the change feed to show what any tab adds. Run: build the package
// (npm run build), serve its root with any static file server, and open
// /examples/tabs/ in two tabs.
import { BrowserLevel } from '../../dist/browser/lsm-level.js'

const db = new BrowserLevel('example-notes', { valueEncoding: 'json' })
const list = document.getElementById('notes')
const role = document.getElementById('role')

const shown = new Set()

function show (key, note) {
  // A note written while the iterator ran may come from both it and the feed.
  if (shown.has(key)) return
  shown.add(key)
  const li = document.createElement('li')
  li.textContent = `${note.text} (from tab ${note.tab})`
  li.dataset.key = key
  list.append(li)
}

async function showRole () {
  const tabs = await db.tabs()
  role.textContent = tabs.role === 'owner'
    ? `This tab owns the database (serving ${tabs.owner.clients} other tab(s)).`
    : 'This tab is a client of the tab that owns the database.'
}

await db.open()
const tab = Math.random().toString(36).slice(2, 6)
// The feed starts at the database's current sequence number: read what is there, then follow.
const since = await db.currentSequence()
for await (const [key, note] of db.iterator()) show(key, note)
await showRole()
setInterval(showRole, 2000)

document.getElementById('add').addEventListener('submit', async (event) => {
  event.preventDefault()
  const input = document.getElementById('text')
  await db.put(`note:${Date.now()}:${tab}`, { text: input.value, tab })
  input.value = ''
})

// Every tab's writes, as they commit (keys and values in their stored form).
async function follow (from) {
  try {
    for await (const batch of db.changes({ since: from })) {
      for (const op of batch.ops) {
        if (op.type === 'put') show(new TextDecoder().decode(op.key), JSON.parse(new TextDecoder().decode(op.value)))
      }
      from = batch.seq
    }
  } catch (err) {
    // The owner tab went away: a feed does not outlive its owner. Follow the new one from where this one was.
    if (err.code === 'LEVEL_OWNER_CHANGED') return follow(from)
    throw err
  }
}
follow(since)
