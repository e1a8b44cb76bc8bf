print("airlock")
