"""Writers of synthetic runtime stores, one module per runtime; `bench.generate` drives them."""
