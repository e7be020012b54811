//! The transport's status code as the journal reports it ([`GrpcCode`]).

use command_journal_core::error::GrpcCode;
use gcloud_sdk::tonic::Code;

/// `code` as the journal's own [`GrpcCode`] (the same number, the same name).
pub(crate) fn grpc_code(code: Code) -> GrpcCode {
    GrpcCode::from_number(code as i32)
}

#[cfg(test)]
mod tests {
    use super::grpc_code;
    use gcloud_sdk::tonic::Code;

    #[test]
    fn every_code_keeps_its_name() {
        for n in 0..=16 {
            let code = Code::from_i32(n);
            // tonic's variant name, upper snake case: `DeadlineExceeded` → `DEADLINE_EXCEEDED`.
            let name = format!("{code:?}");
            let mut upper = String::new();
            for (i, c) in name.chars().enumerate() {
                if i > 0 && c.is_ascii_uppercase() {
                    upper.push('_');
                }
                upper.push(c.to_ascii_uppercase());
            }
            assert_eq!(grpc_code(code).as_str(), upper, "code {n}");
        }
    }
}
