// The JavaScript kernel of agent-tools' `eval` tool (EVAL-1, EVAL-3, EVAL-4, EVAL-6, EVAL-7,
// EVAL-8). Embedded in the crate and run as `node -e SOURCE`; it is written
// nowhere. It speaks JSON lines over its own stdin and stdout (EVAL-7). Cells run through V8's
// inspector `Runtime.evaluate` in REPL mode (re-declarable `const`/`let`, top-level `await`, the
// completion value). A worker thread reads stdin, so an interrupt arrives while a cell is busy, and
// stops it with `Runtime.terminateExecution`; the kernel and its state live on.
'use strict';
const inspector = require('inspector');
const util = require('util');
const { Worker } = require('worker_threads');

const realWrite = process.stdout.write.bind(process.stdout);
function send(message) {
  realWrite(JSON.stringify(message) + '\n');
}

// Everything a cell prints through process.stdout/stderr (console.*) becomes a `stream`
// message; Node cannot move fds 1 and 2, so a child that writes to them directly shows up as
// lines that are not protocol messages, which the host treats as output too.
function capture(chunk, encoding, callback) {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
  send({ type: 'stream', text });
  if (typeof encoding === 'function') encoding();
  else if (typeof callback === 'function') callback();
  return true;
}
process.stdout.write = capture;
process.stderr.write = capture;

const session = new inspector.Session();
session.connect();

const reader = new Worker(
  `
const fs = require('fs');
const inspector = require('inspector');
const { parentPort } = require('worker_threads');
const main = new inspector.Session();
main.connectToMainThread();
const buffer = Buffer.alloc(65536);
let pending = '';
for (;;) {
  let read = 0;
  try {
    read = fs.readSync(0, buffer, 0, buffer.length, null);
  } catch (error) {
    if (error.code === 'EAGAIN' || error.code === 'EINTR') continue;
    read = 0;
  }
  if (read === 0) break;
  pending += buffer.toString('utf8', 0, read);
  let at;
  while ((at = pending.indexOf('\\n')) >= 0) {
    const line = pending.slice(0, at);
    pending = pending.slice(at + 1);
    let message;
    try { message = JSON.parse(line); } catch { continue; }
    if (message.type === 'interrupt') {
      main.post('Runtime.terminateExecution', () => {});
    }
    parentPort.postMessage(message);
  }
}
parentPort.postMessage({ type: 'eof' });
`,
  { eval: true },
);

const cells = [];
const toolCalls = new Map();
let busy = false;
let nextToolCall = 0;

class ToolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolError';
  }
}

// EVAL-6: an awaitable; the text comes back as a String with `.structured`.
function tool(name, args) {
  const id = ++nextToolCall;
  return new Promise((resolve, reject) => {
    toolCalls.set(id, { resolve, reject });
    send({ type: 'tool_call', id, name, args: args || {} });
  });
}

function display(...values) {
  for (const value of values) {
    send({ type: 'display', mime: 'text/plain', text: shown(value) });
  }
}

function shown(value) {
  return typeof value === 'string' ? util.inspect(value) : util.inspect(value, { depth: 4 });
}

globalThis.tool = tool;
globalThis.display = display;
globalThis.ToolError = ToolError;
globalThis.require = require;

reader.on('message', (message) => {
  switch (message.type) {
    case 'execute':
      cells.push(message);
      next();
      break;
    case 'tool_result': {
      const waiting = toolCalls.get(message.id);
      if (!waiting) break;
      toolCalls.delete(message.id);
      if (message.ok) {
        const text = new String(message.text || '');
        text.structured = message.structured;
        waiting.resolve(text);
      } else {
        waiting.reject(new ToolError(message.text || 'the tool failed'));
      }
      break;
    }
    case 'interrupt':
      // A cell waiting on a promise runs no JavaScript for terminateExecution to stop: it
      // ends here, and whatever it awaited is left to settle on its own.
      if (current) current.abort();
      break;
    case 'eof':
      process.exit(0);
  }
});

function post(method, params) {
  return new Promise((resolve) => {
    session.post(method, params, (error, result) => resolve({ error, result }));
  });
}

let current = null;

async function run(cell) {
  const done = { type: 'done', id: cell.id, ok: true };
  const aborted = new Promise((resolve) => {
    current = { abort: () => resolve({ error: { message: 'Execution was terminated' } }) };
  });
  const { error, result } = await Promise.race([
    post('Runtime.evaluate', {
      expression: cell.code,
      replMode: true,
      awaitPromise: true,
      objectGroup: 'cell',
    }),
    aborted,
  ]);
  current = null;
  if (error) {
    if (/terminated/i.test(error.message)) {
      done.ok = false;
      done.interrupted = true;
    } else {
      done.ok = false;
      done.error = { ename: 'Error', evalue: error.message, traceback: error.message };
    }
  } else if (result.exceptionDetails) {
    const details = result.exceptionDetails;
    const text =
      (details.exception && details.exception.description) || details.text || 'Uncaught error';
    done.ok = false;
    done.error = { ename: 'Error', evalue: text, traceback: trim(text) };
  } else {
    const value = result.result;
    if (value.type !== 'undefined') {
      let echoed;
      if (value.objectId) {
        await post('Runtime.callFunctionOn', {
          functionDeclaration: 'function () { globalThis.__agentToolsLast = this; }',
          objectId: value.objectId,
        });
        echoed = shown(globalThis.__agentToolsLast);
        delete globalThis.__agentToolsLast;
      } else if ('unserializableValue' in value) {
        echoed = value.unserializableValue;
      } else {
        echoed = shown(value.value);
      }
      send({ type: 'display', mime: 'text/plain', text: echoed });
    }
  }
  await post('Runtime.releaseObjectGroup', { objectGroup: 'cell' });
  send(done);
}

// A stack keeps the cell's own frames: the inspector's REPL wrapper and Node's internals go.
function trim(text) {
  const lines = text.split('\n');
  const kernel = lines.findIndex((line) => /^\s+at .*(node:inspector|\[eval\])/.test(line));
  return (kernel < 0 ? lines : lines.slice(0, kernel)).join('\n');
}

async function next() {
  if (busy) return;
  busy = true;
  while (cells.length) {
    await run(cells.shift());
  }
  busy = false;
}

send({ type: 'ready', pid: process.pid, interpreter: 'node', version: process.version });
