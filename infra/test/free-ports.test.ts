import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { freePorts } from '../stack/free-ports.ts';

// Test servers' ports come from below the kernel's ephemeral range, so no outgoing connection of a
// running instance can hold one when a service binds it.
describe('freePorts', () => {
  it('gives distinct ports below the ephemeral range, each free to bind', async () => {
    const ports = await freePorts(12);
    assert.equal(new Set(ports).size, 12);
    for (const port of ports) {
      assert.ok(port >= 20_000 && port < 32_768, `${port} is below 32768`);
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('never gives a port something listens on', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', () => resolve()));
    const address = taken.address();
    try {
      const busy = typeof address === 'object' && address !== null ? address.port : 0;
      // Not in the range anyway when the OS picked it; what matters is that none of many equals it.
      assert.ok(!(await freePorts(50)).includes(busy));
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
