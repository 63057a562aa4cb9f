# SPDX-License-Identifier: MIT
"""Recoverable output through the Python client: a result cut to its head
and tail still names its whole output (stdout_bytes, output_id), and
Session.read_output (and its asyncio form) reads any range of it back
byte-exact after the command ended."""
import asyncio

from hermes_sandbox import AsyncClient

N = 400000
TEXT = "".join("%d\n" % i for i in range(1, N + 1))


def test_middle_of_a_long_output(client):
    with client.open("local", session="pyout") as s:
        r = s.exec("seq 1 %d" % N)
        assert r.ok and r.truncated
        assert r.stdout_bytes == len(TEXT) and r.stderr_bytes == 0
        assert r.output_id
        mid = len(TEXT) // 2
        got = s.read_output(r.output_id, offset=mid, length=4096)
        assert got.data == TEXT[mid:mid + 4096]
        assert got.next_offset == mid + 4096 and not got.gap
        tail = s.read_output(r.output_id, offset=len(TEXT) - 10)
        assert tail.data == TEXT[-10:] and tail.raw.get("eof") is True


def test_async_read_output(hs_env):
    async def main():
        async with AsyncClient(hs_env["HS"], env=hs_env) as c:
            s = await c.open("local", session="pyouta")
            r = await s.exec("seq 1 %d" % N)
            got = await s.read_output(r.output_id, offset=1000000, length=100)
            assert got.data == TEXT[1000000:1000100]
            await s.close()
    asyncio.run(main())
