print("ancs")
