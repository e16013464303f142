"""Drive `zhi mcp` with the Model Context Protocol's official Python client (the `mcp` package).

Run by tests/ext/mcp_client.rs as: python mcp_client.py ZHI WORK OUTSIDE TRANSPORT BASE_URL
KEY. ZHI is the binary, WORK the folder it may use (its root, holding zhi.yaml, the schema and
invoices/), OUTSIDE a folder outside the root, BASE_URL the model API and KEY its key. With
`stdio` the client starts `zhi mcp` itself, as an agent does: the SDK hands the server only a
few of this process's variables (HOME, PATH, SHELL, TERM, USER, LOGNAME) and what the server's
`env` adds. A server started without the key is asked to run first, and must say where the key
goes; then one with ZHI_BASE_URL and ZHI_API_KEY in its `env` does the work. With `http` it
starts `zhi mcp --listen 127.0.0.1:0` itself, as a person does, with a token in ZHI_MCP_TOKEN
and the API's variables, and connects over the streamable HTTP transport, after checking that
a request without the token is refused. Prints one JSON object of what it saw on its last
line; an assertion that fails ends it with a traceback and a non-zero exit.
"""

import asyncio
import json
import os
import secrets
import sys
from contextlib import asynccontextmanager

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client


def field(obj, name):
    """A field of the SDK's types by its Python name (SDK 2) or its wire name (SDK 1)."""
    if hasattr(obj, name):
        return getattr(obj, name)
    head, *rest = name.split("_")
    return getattr(obj, head + "".join(w.title() for w in rest))


def structured(result):
    """A tool result's structured content, or its first text as JSON."""
    content = field(result, "structured_content")
    if content is not None:
        return content
    return json.loads(result.content[0].text)


def is_error(result):
    return bool(field(result, "is_error"))


@asynccontextmanager
async def over_stdio(zhi, work, env, seen):
    """`zhi mcp` started as an agent starts it: the SDK's few variables, and `env` over them
    (merged here as the SDK 2 merges it, for SDK 1 would put `env` in their place)."""
    params = StdioServerParameters(
        command=zhi,
        args=["mcp", "--root", work],
        env={**get_default_environment(), **env},
        cwd=work,
    )
    async with stdio_client(params) as (read, write):
        yield read, write


async def without_the_key(zhi, work, job, seen):
    """A server whose `env` gives no key (this process's ZHI_API_KEY is not passed on): its
    `run` refuses, naming the agent's `env` setting and the settings file."""
    async with over_stdio(zhi, work, {}, seen) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            refused = await session.call_tool("run", job)
            assert is_error(refused), refused
            message = structured(refused)["error"]
            for said in ("no API key", "`env` setting", "-e ZHI_API_KEY=", "config.yaml"):
                assert said in message, (said, message)
            seen["no_key"] = message


@asynccontextmanager
async def over_http(zhi, work, env, seen):
    """`zhi mcp --listen` on a free port, and the SDK's streamable HTTP client with the token."""
    from mcp.client import streamable_http
    from mcp.shared._httpx_utils import create_mcp_http_client

    token = secrets.token_hex(32)
    proc = await asyncio.create_subprocess_exec(
        zhi, "mcp", "--listen", "127.0.0.1:0", "--root", work,
        env={**env, "ZHI_MCP_TOKEN": token}, cwd=work,
        stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    try:
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        assert "listening on http://" in line, line
        url = line.split("listening on ", 1)[1].strip()
        async with create_mcp_http_client() as bare:
            hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            refused = await bare.post(url, json=hello)
            assert refused.status_code == 401, refused
            wrong = await bare.post(url, json=hello, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401, wrong
        seen["unauthorized"] = refused.status_code
        headers = {"Authorization": f"Bearer {token}"}
        if hasattr(streamable_http, "streamable_http_client"):  # SDK 2
            async with create_mcp_http_client(headers=headers) as client:
                async with streamable_http.streamable_http_client(url, http_client=client) as s:
                    yield s[0], s[1]
        else:  # SDK 1
            async with streamable_http.streamablehttp_client(url, headers=headers) as s:
                yield s[0], s[1]
    finally:
        proc.terminate()
        code = await asyncio.wait_for(proc.wait(), 30)
        seen["server_exit"] = code


async def main(zhi, work, outside, transport, base_url, key):
    api = {"ZHI_BASE_URL": base_url, "ZHI_API_KEY": key}
    seen = {"transport": transport}
    job = {
        "skill": "extract",
        "inputs": ["invoices"],
        "args": {"schema": "invoice.schema.json"},
        "output": "out",
    }
    if transport == "http":
        connect = over_http
        bare = {k: os.environ[k] for k in ("HOME", "PATH", "LANG") if k in os.environ}
        env = {**bare, **api}
    else:
        connect = over_stdio
        await without_the_key(zhi, work, job, seen)
        env = api
    async with connect(zhi, work, env, seen) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert field(init, "server_info").name == "zhi", init
            seen["protocol"] = field(init, "protocol_version")

            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            assert names == ["cancel", "plan", "results", "run", "skills", "status"], names
            seen["tools"] = names

            skills = structured(await session.call_tool("skills", {}))
            assert any(s["name"] == "extract" for s in skills["skills"]), skills

            plan = await session.call_tool("plan", job)
            assert not is_error(plan), plan
            plan = structured(plan)
            assert plan["by_status"] == {"pending": 2}, plan
            assert plan["estimated_tokens"] > 0, plan
            seen["plan"] = plan["by_status"]

            started = await session.call_tool("run", job)
            assert not is_error(started), started
            run_id = structured(started)["run_id"]

            progress = []

            async def on_progress(done, total, message):
                progress.append((done, total, message))

            status = None
            for _ in range(60):
                result = await session.call_tool(
                    "status",
                    {"run_id": run_id, "wait_seconds": 30},
                    progress_callback=on_progress,
                )
                status = structured(result)
                if status["done"]:
                    break
            assert status["done"] and status["counts"]["succeeded"] == 2, status
            assert progress and progress[-1][0] == 2 and progress[-1][1] == 2, progress
            seen["progress"] = progress

            overview = structured(await session.call_tool("results", {"output": "out"}))
            assert overview["tables"] == ["extract-invoice"], overview
            table = structured(
                await session.call_tool(
                    "results", {"output": "out", "table": "extract-invoice", "limit": 1}
                )
            )
            assert table["rows_total"] == 2 and len(table["rows"]) == 1, table
            assert table["next_offset"] == 1, table
            rest = structured(
                await session.call_tool(
                    "results", {"output": "out", "table": "extract-invoice", "offset": 1}
                )
            )
            numbers = sorted(r["invoice_number"] for r in table["rows"] + rest["rows"])
            assert numbers == ["GX-7", "INV-0042"], numbers
            seen["table"] = numbers

            resources = await session.list_resources()
            uris = [str(r.uri) for r in resources.resources]
            manifest = [u for u in uris if u.endswith(run_id + "/manifest.json")]
            assert manifest, uris
            read = await session.read_resource(manifest[0])
            assert json.loads(read.contents[0].text)["run_id"] == run_id, read
            assert any(u.endswith("tables/extract-invoice.csv") for u in uris), uris
            seen["resources"] = len(uris)

            refused = await session.call_tool(
                "plan", {"skill": "extract", "inputs": [outside], "args": job["args"]}
            )
            assert is_error(refused), refused
            message = structured(refused)["error"]
            assert "outside the folders" in message and work in message, message
            seen["refused"] = message
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
