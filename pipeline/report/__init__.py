"""`rt4chart report`: a self-contained static HTML report of an audit run."""
