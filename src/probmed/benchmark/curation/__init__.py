"""Raw captions and images -> image records: images, caption extraction, positions, vocabularies."""
