from archivist_mcp.cli import main

main()
