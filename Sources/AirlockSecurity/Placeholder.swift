// Security policy arrives with the TLS work.
