import COpenSSL

extension TLSClientContext {
    /// Minimum security bits per OpenSSL level 1...5 (`minbits_table` in crypto/x509/x509_vfy.c).
    static let minimumBits: [Int32] = [80, 112, 128, 192, 256]

    /// OpenSSL's security-level checks of a verification (`check_key_level`, `check_sig_level`) over the
    /// chain as presented, for a route where no verification runs (public-key pinning with
    /// `allow_invalid_certificates`): every key must reach the level's bits (error 66 for the leaf,
    /// 67 for the others), and every signature too (68), except that of a certificate that really
    /// signs itself (an anchor's own signature proves nothing, as in `X509_verify_cert`). Nothing
    /// else is checked: not trust, dates or names. Nil when the chain passes.
    func securityLevelFailure(of chain: OpaquePointer) -> VerifyError? {
        guard securityLevel > 0 else { return nil }
        let bits = Self.minimumBits[Int(min(securityLevel, 5)) - 1]
        for i in 0..<airlock_sk_X509_num(chain) {
            guard let x = airlock_sk_X509_value(chain, i) else { continue }
            let key = X509_get0_pubkey(x)
            if (key.map { EVP_PKEY_get_security_bits($0) } ?? 0) < bits {
                return Self.verifyError(i == 0 ? X509_V_ERR_EE_KEY_TOO_SMALL : X509_V_ERR_CA_KEY_TOO_SMALL)
            }
            // Signed by its own key (whatever its key usage says, unlike X509_self_signed).
            let signsItself = key.map { X509_verify(x, $0) == 1 } ?? false
            if !signsItself {
                var signatureBits: Int32 = -1
                if X509_get_signature_info(x, nil, nil, &signatureBits, nil) != 1 || signatureBits < bits {
                    return Self.verifyError(X509_V_ERR_CA_MD_TOO_WEAK)
                }
            }
        }
        ERR_clear_error()
        return nil
    }

    static func verifyError(_ code: Int32) -> VerifyError {
        ERR_clear_error()
        return VerifyError(code: code, text: String(cString: X509_verify_cert_error_string(Int(code))))
    }
}
