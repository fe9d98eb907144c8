"""What every provider's HTTP shares: its failures as ``ProviderError`` (:mod:`.errors`) and
how long its idle connections are kept (:mod:`.keep_alive`)."""
