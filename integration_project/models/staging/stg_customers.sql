-- One row per customer, names tidied and the e-mail address normalised.
select
    customer_id,
    trim(first_name)                                  as first_name,
    trim(last_name)                                   as last_name,
    concat_ws(' ', trim(first_name), trim(last_name)) as full_name,
    lower(email)                                      as email,
    city,
    upper(country_code)                               as country_code,
    signup_date,
    coalesce(marketing_opt_in, false)                 as is_marketing_opt_in
from {{ ref('customers') }}
