class Store:
    """Links by code, in memory."""

    def __init__(self):
        self.links = {}

    def add(self, code, url):
        self.links[code] = url

    def get(self, code):
        return self.links.get(code)
