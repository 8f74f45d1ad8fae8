{
  "targets": [
    {
      "target_name": "block_hashes",
      "sources": ["block_hashes.c"],
      "cflags": ["-O3"],
      "conditions": [
        # Resolve every symbol at load time, so a node binary without OpenSSL's SHA-256
        # exports fails the require (caught by the loader) rather than a later call.
        ["OS=='linux'", { "ldflags": ["-Wl,-z,now"] }]
      ]
    }
  ]
}
