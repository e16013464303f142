"""An MCP server written with the protocol's official Python SDK (the `mcp` package): one
tool, `rate`, that gives an exchange rate from a fixed table. Each call is appended to the file
that the variable RATES_CALLS names, so the test sees that this process answered it.

Run by a skill's run, as the settings' `mcp:` server `rates` (tests/ext/mcp_client.rs).
"""

import os

try:  # the SDK's second major version
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # its first
    from mcp.server.fastmcp import FastMCP as Server

RATES = {"GBP": "9.12", "USD": "7.24", "EUR": "7.83"}

server = Server("rates")


@server.tool()
def rate(currency: str) -> str:
    """How many yuan (CNY) one unit of a currency buys, by its ISO code (GBP, USD, EUR)."""
    code = currency.strip().upper()
    with open(os.environ["RATES_CALLS"], "a", encoding="utf-8") as log:
        log.write(code + "\n")
    if code not in RATES:
        raise ValueError(f"no rate for {code}")
    return f"1 {code} = {RATES[code]} CNY (rates table of 2026-11-28)"


if __name__ == "__main__":
    server.run()
