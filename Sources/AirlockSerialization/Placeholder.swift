// Response validators arrive with the response-validation work.
