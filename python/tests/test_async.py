# SPDX-License-Identifier: MIT
"""The asyncio API against the real hs serve."""
import asyncio
import os
import threading

import pytest

from hermes_sandbox import AsyncClient, AsyncJob, Denied, Result

DANGEROUS = 'psql -h 127.0.0.1 -p 1 -c "DROP TABLE hs_py_t"'


def test_async_api(hs_env, tmpdir_str):
    marker = os.path.join(tmpdir_str, "ran")

    async def main() -> None:
        async with AsyncClient(hs_env["HS"], env=hs_env) as hs:
            assert (await hs.hello())["protocol"] >= 1
            sessions = [await hs.open("local") for _ in range(4)]
            # Four commands awaited together, one per session.
            results = await asyncio.gather(*(s.exec("sleep 0.2; echo %d" % i) for i, s in enumerate(sessions)))
            assert [r.stdout for r in results] == ["%d\n" % i for i in range(4)]
            s = sessions[0]
            loop_thread = []
            chunks = []

            def on_output(name, data):
                loop_thread.append(threading.current_thread() is threading.main_thread())
                chunks.append(data)
            r = await s.exec("echo a; echo b", stream=on_output)
            assert isinstance(r, Result) and r.stdout == "a\nb\n"
            await asyncio.sleep(0)  # let the loop run the callbacks scheduled on it
            assert "".join(chunks) == "a\nb\n" and all(loop_thread)
            job = await s.exec("echo bg; exit 5", background=True)
            assert isinstance(job, AsyncJob)
            state = await asyncio.wait_for(job.wait(), 30)
            assert state["exit_code"] == 5 and (await job.output()).data == "bg\n"
            await s.put_file(tmpdir_str + "/f", b"\x00\xff")
            assert await s.get_file(tmpdir_str + "/f") == b"\x00\xff"

            async def deny(req):
                await asyncio.sleep(0)
                return "deny"
            with pytest.raises(Denied):
                await s.exec("touch %s; %s" % (marker, DANGEROUS), on_approval=deny)
            assert not os.path.exists(marker)

            async def once(req):
                return "once"
            r = await s.exec("touch %s; %s" % (marker, DANGEROUS), on_approval=once)
            assert os.path.exists(marker)
            for x in sessions:
                await x.close()
    asyncio.run(asyncio.wait_for(main(), 300))
