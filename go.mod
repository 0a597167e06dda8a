module github.com/gemini-mcp-server/gemini-mcp-server

go 1.26.8

require github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
