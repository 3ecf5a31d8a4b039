"""What reaches a terminal or a JSON reader: values, nodes, tables, show, the JSON documents."""
