#error "the user folder core/ must not shadow tapegrad headers"
