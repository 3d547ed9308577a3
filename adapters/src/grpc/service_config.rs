//! The retry and hedging policies of a gRPC service config (JSON), per method.
//!
//! Rule (gRFC A6 "Integration with Service Config", gRPC's `doc/service_config.md`): each
//! `methodConfig` names methods (`{"service": s, "method": m}`, `{"service": s}` for all of a
//! service's methods, `{}` for every method) and sets at most one of `retryPolicy` and
//! `hedgingPolicy`, and an optional `timeout`; `retryThrottling` (`maxTokens`, `tokenRatio`)
//! is the channel's retry throttle. A method takes the most specific name that matches. A
//! config that breaks a rule is refused whole, with where and why.
//!
//! Durations are proto3 JSON strings (`"0.1s"`); codes are names (`"UNAVAILABLE"`) or
//! numbers. Field names are matched without regard to case, as grpc-go reads them (its
//! examples write `"MaxAttempts"`).

use core::fmt;
use core::time::Duration;
use std::sync::Arc;

use backstop_core::grpc::{Code, PolicyError, RetryPolicy};
use backstop_core::TokenBucket;
use serde_json::{Map, Value};

/// A service config's per-method policies and its retry throttle.
///
/// ```
/// use backstop::grpc::ServiceConfig;
///
/// let config = ServiceConfig::from_json(r#"{
///   "methodConfig": [{
///     "name": [{"service": "helloworld.Greeter"}],
///     "timeout": "2s",
///     "retryPolicy": {
///       "maxAttempts": 4,
///       "initialBackoff": "0.1s",
///       "maxBackoff": "1s",
///       "backoffMultiplier": 2,
///       "retryableStatusCodes": ["UNAVAILABLE"]
///     }
///   }],
///   "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
/// }"#)?;
/// let policy = config.policy_for("/helloworld.Greeter/SayHello");
/// assert_eq!(policy.map(|p| p.policy().max_attempts()), Some(4));
/// assert!(config.policy_for("/other.Service/Call").is_none());
/// assert!(config.retry_throttling().is_some());
///
/// let refused = ServiceConfig::from_json(r#"{"methodConfig": [{"name": [{}],
///   "retryPolicy": {"maxAttempts": 1}}]}"#);
/// assert_eq!(
///     refused.err().map(|e| e.to_string()).as_deref(),
///     Some("methodConfig[0].retryPolicy: maxAttempts must be 2 or more, got 1")
/// );
/// # Ok::<(), backstop::grpc::ServiceConfigError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ServiceConfig {
    /// Each name, and the policy (or none: sent once) and timeout of its method config.
    methods: Vec<(Name, Method)>,
    throttling: Option<(u32, u32)>,
}

/// A `methodConfig` name: a service and a method, or a service, or neither.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Name {
    service: String,
    method: String,
}

/// What a method config says of its methods.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Method {
    /// The retry or hedging policy, if any.
    pub(crate) policy: Option<RetryPolicy>,
    /// The method config's `timeout`, if any.
    pub(crate) timeout: Option<Duration>,
}

impl ServiceConfig {
    /// Parses and validates a service config.
    ///
    /// # Errors
    /// Where and why the config breaks a rule: JSON that does not parse, a field of the wrong
    /// type, both policies on one method config, a name given twice, an A6 policy refused.
    pub fn from_json(json: &str) -> Result<ServiceConfig, ServiceConfigError> {
        let root: Value = serde_json::from_str(json)
            .map_err(|e| ServiceConfigError::new(String::new(), e.to_string()))?;
        let root = object(&root, "")?;
        let mut config = ServiceConfig::default();
        if let Some(list) = field(root, "methodConfig") {
            let list = list
                .as_array()
                .ok_or_else(|| ServiceConfigError::field("methodConfig", "must be a list"))?;
            for (i, entry) in list.iter().enumerate() {
                let at = format!("methodConfig[{i}]");
                config.method_config(&at, object(entry, &at)?)?;
            }
        }
        if let Some(throttling) = field(root, "retryThrottling") {
            config.throttling = Some(throttle(object(throttling, "retryThrottling")?)?);
        }
        Ok(config)
    }

    /// The policy of the method at `path` (`/package.Service/Method`): its most specific
    /// method config's, `None` when none names it or its config sets no policy (the call is
    /// sent once).
    #[must_use]
    pub fn policy_for(&self, path: &str) -> Option<&RetryPolicy> {
        self.method(path)?.policy.as_ref()
    }

    /// A retry throttle made from `retryThrottling`, if the config has one: give it to the
    /// layer's [`Retrier`](crate::Retrier) as its budget (one per channel).
    #[must_use]
    pub fn retry_throttling(&self) -> Option<Arc<TokenBucket>> {
        let (max_tokens, ratio_milli) = self.throttling?;
        TokenBucket::new(max_tokens, ratio_milli).ok().map(Arc::new)
    }

    /// Whether every policy of the config retries (or, hedging, takes as not fatal) `code`.
    pub(crate) fn every_policy_retries(&self, code: backstop_core::grpc::Code) -> bool {
        let policies = self.methods.iter().filter_map(|(_, m)| m.policy.as_ref());
        policies
            .into_iter()
            .all(|p| p.retried_codes().contains(code))
    }

    /// The method config of the method at `path`: an exact name, else its service's, else
    /// the default (`{}`).
    pub(crate) fn method(&self, path: &str) -> Option<&Method> {
        let (service, method) = path.strip_prefix('/')?.split_once('/')?;
        let find = |s: &str, m: &str| {
            self.methods
                .iter()
                .find(|(n, _)| n.service == s && n.method == m)
                .map(|(_, method)| method)
        };
        find(service, method)
            .or_else(|| find(service, ""))
            .or_else(|| find("", ""))
    }

    fn method_config(
        &mut self,
        at: &str,
        entry: &Map<String, Value>,
    ) -> Result<(), ServiceConfigError> {
        let timeout = field(entry, "timeout")
            .map(|t| duration(t, &format!("{at}.timeout")))
            .transpose()?;
        let retry = field(entry, "retryPolicy");
        let hedging = field(entry, "hedgingPolicy");
        let policy = match (retry, hedging) {
            (Some(_), Some(_)) => {
                return Err(ServiceConfigError::new(
                    at,
                    "only one of retryPolicy and hedgingPolicy may be set",
                ))
            }
            (Some(r), None) => Some(retry_policy(r, &format!("{at}.retryPolicy"), timeout)?),
            (None, Some(h)) => Some(hedging_policy(h, &format!("{at}.hedgingPolicy"), timeout)?),
            (None, None) => None,
        };
        let names = match field(entry, "name") {
            Some(Value::Array(names)) => names,
            Some(_) => {
                return Err(ServiceConfigError::field(
                    format!("{at}.name"),
                    "must be a list",
                ))
            }
            None => {
                return Err(ServiceConfigError::field(
                    format!("{at}.name"),
                    "is required",
                ))
            }
        };
        for (j, name) in names.iter().enumerate() {
            let here = format!("{at}.name[{j}]");
            let name = name_of(object(name, &here)?, &here)?;
            if self.methods.iter().any(|(n, _)| *n == name) {
                return Err(ServiceConfigError::field(
                    here,
                    "names a method already configured",
                ));
            }
            self.methods.push((name, Method { policy, timeout }));
        }
        Ok(())
    }
}

fn name_of(name: &Map<String, Value>, at: &str) -> Result<Name, ServiceConfigError> {
    let text = |key: &str| match field(name, key) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ServiceConfigError::field(
            format!("{at}.{key}"),
            "must be a string",
        )),
    };
    let (service, method) = (text("service")?, text("method")?);
    if service.is_empty() && !method.is_empty() {
        return Err(ServiceConfigError::new(at, "a method needs its service"));
    }
    Ok(Name { service, method })
}

fn retry_policy(
    value: &Value,
    at: &str,
    timeout: Option<Duration>,
) -> Result<RetryPolicy, ServiceConfigError> {
    let p = object(value, at)?;
    let mut b = RetryPolicy::builder();
    if let Some(n) = field(p, "maxAttempts") {
        b = b.max_attempts(count(n, &format!("{at}.maxAttempts"))?);
    }
    if let Some(d) = field(p, "initialBackoff") {
        b = b.initial_backoff(duration(d, &format!("{at}.initialBackoff"))?);
    }
    if let Some(d) = field(p, "maxBackoff") {
        b = b.max_backoff(duration(d, &format!("{at}.maxBackoff"))?);
    }
    if let Some(m) = field(p, "backoffMultiplier") {
        let m = m.as_f64().ok_or_else(|| {
            ServiceConfigError::field(format!("{at}.backoffMultiplier"), "must be a number")
        })?;
        b = b.backoff_multiplier(m);
    }
    if let Some(codes) = field(p, "retryableStatusCodes") {
        b = b.retryable_status_codes(&codes_of(codes, &format!("{at}.retryableStatusCodes"))?);
    }
    if let Some(t) = timeout {
        b = b.timeout(t);
    }
    b.build().map_err(|e| refused(at, e))
}

fn hedging_policy(
    value: &Value,
    at: &str,
    timeout: Option<Duration>,
) -> Result<RetryPolicy, ServiceConfigError> {
    let p = object(value, at)?;
    let mut b = RetryPolicy::hedging_builder();
    if let Some(n) = field(p, "maxAttempts") {
        b = b.max_attempts(count(n, &format!("{at}.maxAttempts"))?);
    }
    if let Some(d) = field(p, "hedgingDelay") {
        b = b.hedging_delay(duration(d, &format!("{at}.hedgingDelay"))?);
    }
    if let Some(codes) = field(p, "nonFatalStatusCodes") {
        b = b.non_fatal_status_codes(&codes_of(codes, &format!("{at}.nonFatalStatusCodes"))?);
    }
    if let Some(t) = timeout {
        b = b.timeout(t);
    }
    b.build().map_err(|e| refused(at, e))
}

fn throttle(t: &Map<String, Value>) -> Result<(u32, u32), ServiceConfigError> {
    let at = "retryThrottling";
    let max = field(t, "maxTokens")
        .ok_or_else(|| ServiceConfigError::field(format!("{at}.maxTokens"), "is required"))?;
    let max = count(max, &format!("{at}.maxTokens"))?;
    if max == 0 || max > 1000 {
        return Err(ServiceConfigError::field(
            format!("{at}.maxTokens"),
            "must be above 0 and at most 1000",
        ));
    }
    let ratio = field(t, "tokenRatio")
        .and_then(Value::as_f64)
        .ok_or_else(|| ServiceConfigError::field(format!("{at}.tokenRatio"), "must be a number"))?;
    // A6: the ratio keeps three decimals; it must be above zero.
    let milli = (ratio * 1000.0).round();
    if !(milli >= 1.0 && milli <= f64::from(u32::MAX)) {
        return Err(ServiceConfigError::field(
            format!("{at}.tokenRatio"),
            "must be at least 0.001",
        ));
    }
    Ok((max, milli as u32))
}

fn refused(at: &str, e: PolicyError) -> ServiceConfigError {
    ServiceConfigError::new(at, e.to_string())
}

/// The field `name` of `object`, its name matched without regard to case.
fn field<'v>(object: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    object.get(name).or_else(|| {
        object
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

fn object<'v>(value: &'v Value, at: &str) -> Result<&'v Map<String, Value>, ServiceConfigError> {
    value
        .as_object()
        .ok_or_else(|| ServiceConfigError::field(at, "must be an object"))
}

fn count(value: &Value, at: &str) -> Result<u32, ServiceConfigError> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| ServiceConfigError::field(at, "must be a non-negative integer"))
}

fn codes_of(value: &Value, at: &str) -> Result<Vec<Code>, ServiceConfigError> {
    let list = value
        .as_array()
        .ok_or_else(|| ServiceConfigError::field(at, "must be a list"))?;
    list.iter()
        .map(|code| match code {
            Value::String(name) => Code::from_name(&name.to_ascii_uppercase()),
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| i32::try_from(n).ok())
                .filter(|n| *n <= 16)
                .map(Code::from_i32),
            _ => None,
        })
        .map(|code| {
            code.ok_or_else(|| ServiceConfigError::field(at, "holds a code gRPC does not define"))
        })
        .collect()
}

/// A proto3 JSON duration: seconds with up to nine decimals, then `s` (`"0.1s"`, `"2s"`).
fn duration(value: &Value, at: &str) -> Result<Duration, ServiceConfigError> {
    let bad = || ServiceConfigError::field(at, "must be a duration such as \"0.1s\"");
    let text = value.as_str().ok_or_else(bad)?;
    let number = text.strip_suffix('s').ok_or_else(bad)?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty())
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > 9
    {
        return Err(bad());
    }
    let secs: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let nanos: u32 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<9}").parse().map_err(|_| bad())?
    };
    Ok(Duration::new(secs, nanos))
}

/// Why a service config was refused: where (a JSON path, `methodConfig[0].retryPolicy`) and
/// what rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceConfigError(String);

impl ServiceConfigError {
    /// `problem` at `at` (`methodConfig[0]: ...`), or in the whole config.
    fn new(at: impl Into<String>, problem: impl Into<String>) -> Self {
        let (at, problem) = (at.into(), problem.into());
        if at.is_empty() {
            ServiceConfigError(format!("service config: {problem}"))
        } else {
            ServiceConfigError(format!("{at}: {problem}"))
        }
    }

    /// The field at `at` breaks `rule` (`methodConfig[0].timeout must be ...`).
    fn field(at: impl Into<String>, rule: &str) -> Self {
        let at = at.into();
        if at.is_empty() {
            ServiceConfigError(format!("the service config {rule}"))
        } else {
            ServiceConfigError(format!("{at} {rule}"))
        }
    }
}

impl fmt::Display for ServiceConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServiceConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> String {
        ServiceConfig::from_json(json)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_most_specific_name_wins() {
        let config = ServiceConfig::from_json(
            r#"{"methodConfig": [
              {"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.05s"}},
              {"name": [{"service": "s"}], "timeout": "1.5s"},
              {"name": [{"service": "s", "method": "m"}], "retryPolicy": {
                "MaxAttempts": 9, "InitialBackoff": ".01s", "MaxBackoff": ".01s",
                "BackoffMultiplier": 1.0, "RetryableStatusCodes": ["UNAVAILABLE", 8]}}
            ]}"#,
        );
        let config = config.unwrap_or_default();
        let exact = config.policy_for("/s/m").copied();
        assert_eq!(exact.map(|p| p.policy().max_attempts()), Some(5));
        assert!(exact.is_some_and(|p| p.retried_codes().contains(Code::ResourceExhausted)));
        assert!(config.policy_for("/s/other").is_none());
        assert_eq!(
            config.method("/s/other").and_then(|m| m.timeout),
            Some(Duration::from_millis(1500))
        );
        let default = config.policy_for("/t/x").and_then(|p| p.policy().hedging());
        assert!(default.is_some());
        assert!(config.policy_for("no-slash").is_none());
    }

    #[test]
    fn invalid_configs_say_where_and_why() {
        assert!(err("{").starts_with("service config: "));
        assert_eq!(
            err(r#"{"methodConfig": [{"name": [{}], "retryPolicy": {}, "hedgingPolicy": {}}]}"#),
            "methodConfig[0]: only one of retryPolicy and hedgingPolicy may be set"
        );
        assert_eq!(
            err(r#"{"methodConfig": [{"name": [{}], "timeout": "1m"}]}"#),
            "methodConfig[0].timeout must be a duration such as \"0.1s\""
        );
        assert_eq!(
            err(r#"{"methodConfig": [{"name": [{}]}, {"name": [{}]}]}"#),
            "methodConfig[1].name[0] names a method already configured"
        );
        assert_eq!(
            err(
                r#"{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
              "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2,
              "retryableStatusCodes": ["NOPE"]}}]}"#
            ),
            "methodConfig[0].retryPolicy.retryableStatusCodes holds a code gRPC does not define"
        );
        assert_eq!(
            err(
                r#"{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
              "initialBackoff": "0s", "maxBackoff": "1s", "backoffMultiplier": 2,
              "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#
            ),
            "methodConfig[0].retryPolicy: initialBackoff must be greater than zero"
        );
        assert_eq!(
            err(r#"{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0}}"#),
            "retryThrottling.tokenRatio must be at least 0.001"
        );
        assert_eq!(
            err(r#"{"methodConfig": [{"name": [{"method": "m"}]}]}"#),
            "methodConfig[0].name[0]: a method needs its service"
        );
    }

    #[test]
    fn durations_read_as_proto3_json_writes_them() {
        let d = |s: &str| duration(&Value::String(s.into()), "");
        assert_eq!(d("0.1s"), Ok(Duration::from_millis(100)));
        assert_eq!(d(".01s"), Ok(Duration::from_millis(10)));
        assert_eq!(d("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(d("1.000000001s"), Ok(Duration::new(1, 1)));
        for bad in ["", "s", "1", "-1s", "1.0000000001s", "1e3s", "1ms"] {
            assert!(d(bad).is_err(), "{bad}");
        }
    }
}
