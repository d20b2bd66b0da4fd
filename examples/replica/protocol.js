// The replica example's wire format: newline-delimited JSON over a stream
// (a Unix socket here; a TCP socket or a pipe works the same).
//
//   replica -> primary   {"checkpoint":"<dir>"}      write a checkpoint into <dir>
//   primary -> replica   {"checkpoint":<seq>}        done: the checkpoint is at <seq>
//   replica -> primary   {"follow":<since>}          send the batches after <since>
//   primary -> replica   {"seq":<n>,"ops":[...]}     one committed batch, then the next ...
//   primary -> replica   {"error":"<code>","message":"..."}
//
// An op is ["put", key, value], ["del", key] or ["clear", start, end|null],
// keys and values base64 (the stored bytes).
'use strict'

function encodeBatch (batch) {
  const ops = batch.ops.map((op) => op.type === 'put'
    ? ['put', op.key.toString('base64'), op.value.toString('base64')]
    : op.type === 'del'
      ? ['del', op.key.toString('base64')]
      : ['clear', op.key.toString('base64'), op.end ? op.end.toString('base64') : null])
  return JSON.stringify({ seq: batch.seq, ops }) + '\n'
}

/** Calls `onMessage(object)` for each line read from `stream`; returns nothing. */
function readMessages (stream, onMessage) {
  let buf = ''
  stream.on('data', (chunk) => {
    buf += chunk.toString('utf8')
    let nl
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      if (line !== '') onMessage(JSON.parse(line))
    }
  })
}

module.exports = { encodeBatch, readMessages }
