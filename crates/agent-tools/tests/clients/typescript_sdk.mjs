// `agent-tools serve` to the MCP TypeScript SDK (issue 21): tools/list without schema
// warnings, plain calls, a write under an approval card answered through elicitation, and the
// SDK's 2025-11-25 tasks: callToolStream, getTask, listTasks, cancelTask; and a plain long
// call from a client that names the tasks extension at initialize.
//
// Usage: node typescript_sdk.mjs AGENT_TOOLS_BINARY WORKSPACE            (stdio: it starts serve)
//        node typescript_sdk.mjs --http URL WORKSPACE                   (a running serve --http,
//                                                                        token in AGENT_TOOLS_TOKEN)
// Prints one JSON line per check: {"check": NAME, "ok": true|false, "detail": ...}, and
// exits 1 when any failed. The SDK is resolved from NODE_PATH (.tools/node/node_modules).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [binary, root] = process.argv.slice(2).filter((arg) => arg !== '--http');
const http = process.argv.includes('--http');
// Over HTTP both clients reach the one run of the server the test started (its approval is
// `ask`); over stdio each starts its own `serve` with the approval it names.
function transport(approval) {
  if (http) {
    return new StreamableHTTPClientTransport(new URL(binary), {
      requestInit: { headers: { Authorization: `Bearer ${process.env.AGENT_TOOLS_TOKEN}` } },
    });
  }
  return new StdioClientTransport({
    command: binary,
    args: ['serve', '--root', root, '--approval', approval],
    // The whole environment (the SDK passes only a safe few by default): the test marks the
    // server's processes through it.
    env: { ...process.env },
    stderr: 'ignore',
  });
}
let failed = 0;
function check(name, ok, detail) {
  if (!ok) failed += 1;
  console.log(JSON.stringify({ check: name, ok: Boolean(ok), detail }));
}
const warnings = [];
for (const level of ['warn', 'error']) {
  const original = console[level];
  console[level] = (...args) => {
    warnings.push(args.map(String).join(' '));
    original.apply(console, args);
  };
}
const text = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

const cards = [];
const client = new Client(
  { name: 'typescript-sdk-check', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} }, tasks: { list: {}, cancel: {}, requests: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  cards.push(request.params.message);
  return { action: 'accept', content: { decision: 'allow' } };
});
await client.connect(transport('ask'));

try {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  check('listTools', ['read', 'eval', 'ast_grep', 'write'].every((n) => names.includes(n)), names);
  check('listTools: no schema warnings', warnings.length === 0, warnings.slice(0, 3));
  const eval_ = tools.find((t) => t.name === 'eval');
  check('eval may run as a task', eval_?.execution?.taskSupport === 'optional', eval_?.execution);
  check('read runs as a call', tools.find((t) => t.name === 'read')?.execution === undefined, null);

  const read = await client.callTool({ name: 'read', arguments: { path: 'app.py' } });
  check('read', !read.isError && text(read).includes('def area') && read.structuredContent, text(read));
  const search = await client.callTool({ name: 'ast_grep', arguments: { pattern: 'return $X', language: 'python' } });
  check('ast_grep', !search.isError && text(search).includes('app.py:'), text(search));
  const cell = await client.callTool({ name: 'eval', arguments: { language: 'python', code: '6 * 7', description: 'multiply two numbers to check the kernel' } });
  check('eval', !cell.isError && text(cell).includes('42'), text(cell));
  const diagnostics = await client.callTool({ name: 'lsp', arguments: { operation: 'diagnostics', path: 'app.py' } });
  check(
    'lsp diagnostics (basedpyright)',
    !diagnostics.isError && text(diagnostics).includes('app.py') && diagnostics.structuredContent,
    text(diagnostics),
  );

  const write = await client.callTool({ name: 'write', arguments: { path: 'new.txt', content: 'hello\n' } });
  check('write under an approval card', !write.isError && cards.some((c) => c.includes('`write`')), { text: text(write), cards });

  // A long cell as a 2025-11-25 task: created, polled, completed with its result.
  const seen = [];
  let result = null;
  for await (const message of client.experimental.tasks.callToolStream({
    name: 'eval',
    arguments: { language: 'python', code: 'import time\ntime.sleep(1.5)\n"slept"', description: 'sleep a moment and say so' },
  })) {
    seen.push(message.type === 'taskStatus' ? `taskStatus:${message.task.status}` : message.type);
    if (message.type === 'result') result = message.result;
    if (message.type === 'error') seen.push(String(message.error));
  }
  check(
    'callToolStream: taskCreated, taskStatus, result',
    seen[0] === 'taskCreated' && seen.includes('taskStatus:completed') && result && text(result).includes('slept'),
    { seen, text: result && text(result) },
  );

  // A task cancelled while it runs: the cell is interrupted and the task reads cancelled.
  const stream = client.experimental.tasks.callToolStream(
    { name: 'eval', arguments: { language: 'python', code: 'while True:\n    pass', description: 'spin forever until the task is cancelled' } },
  );
  const first = await stream.next();
  const taskId = first.value?.task?.taskId;
  check('a running cell became a task', first.value?.type === 'taskCreated' && taskId, first.value);
  const running = await client.experimental.tasks.getTask(taskId);
  check('getTask reads ttl and pollInterval', running.ttl !== undefined && running.status === 'working', running);
  const listed = await client.experimental.tasks.listTasks();
  check('listTasks lists both', listed.tasks.length >= 2 && listed.tasks.some((t) => t.taskId === taskId), listed.tasks.map((t) => t.status));
  const cancelled = await client.experimental.tasks.cancelTask(taskId);
  check('cancelTask ends it', cancelled.status === 'cancelled', cancelled);
  const rest = [];
  for await (const message of stream) rest.push(message.type);
  check('the cancelled stream ends with an error', rest.at(-1) === 'error', rest);
  const after = await client.callTool({ name: 'eval', arguments: { language: 'python', code: '1 + 1', description: 'add two numbers after the cancel' } });
  check('the kernel lives on after the cancel', text(after).trim() === '2', text(after));
  const again = await client.experimental.tasks.cancelTask(taskId).then(
    () => 'no error',
    (error) => String(error),
  );
  check('cancelling an ended task is refused', again.includes('already ended'), again);

  // A client that names the tasks extension at initialize (as the MCP Inspector does) and
  // makes a plain callTool of a long cell: on 2025-11-25 it gets the result, not a task.
  const named = new Client(
    { name: 'typescript-sdk-extension', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } } },
  );
  named.setRequestHandler(ElicitRequestSchema, async (request) => {
    cards.push(request.params.message);
    return { action: 'accept', content: { decision: 'allow' } };
  });
  await named.connect(transport('allow'));
  try {
    const long = await named.callTool({ name: 'eval', arguments: { language: 'python', code: 'import time\ntime.sleep(2.5)\n"slept"', description: 'sleep past the task grace and say so' } });
    check('a long plain callTool with the extension named answers with its result', !long.isError && text(long).includes('slept') && long.structuredContent, text(long));
  } finally {
    await named.close();
  }
} catch (error) {
  check('no exception', false, String(error?.stack ?? error));
} finally {
  await client.close();
}
process.exit(failed === 0 ? 0 : 1);
